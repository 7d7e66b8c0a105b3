use std::collections::BTreeMap;

use proptest::prelude::*;
use serde::{Deserialize, Serialize};

use super::*;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Sample {
    id: u64,
    name: String,
    bytes: Vec<u8>,
    rows: BTreeMap<u16, String>,
    maybe: Option<i32>,
    kind: Kind,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
enum Kind {
    Plain,
    WithText {
        text: String,
    },
    #[serde(other)]
    Unknown,
}

/// What a newer peer might send: one more trailing field and one more kind.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct SampleV2 {
    id: u64,
    name: String,
    bytes: Vec<u8>,
    rows: BTreeMap<u16, String>,
    maybe: Option<i32>,
    kind: KindV2,
    added: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
enum KindV2 {
    Plain,
    WithText { text: String },
    Newer { count: u32, note: String },
}

fn sample() -> Sample {
    Sample {
        id: 7,
        name: "web-1".to_owned(),
        bytes: vec![0, 1, 2, 255],
        rows: BTreeMap::from([(0, "$ ls".to_owned()), (3, "ok".to_owned())]),
        maybe: Some(-3),
        kind: Kind::WithText {
            text: "héllo".to_owned(),
        },
    }
}

/// A payload for a `String` whose varint length claims `len` bytes, followed by `body`.
fn lying_string(len: u64, body: &[u8]) -> Vec<u8> {
    let mut out = vec![253u8]; // varint marker: a u64 follows, little-endian
    out.extend_from_slice(&len.to_le_bytes());
    out.extend_from_slice(body);
    out
}

#[test]
fn value_round_trips() {
    let value = sample();
    let payload = encode(&value).unwrap();
    assert_eq!(decode::<Sample>(&payload).unwrap(), value);
}

#[test]
fn frame_round_trips_through_a_stream() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    rt.block_on(async {
        let mut out = Vec::new();
        write_message(&mut out, &sample()).await.unwrap();
        write_message(&mut out, &42u32).await.unwrap();
        let mut input = out.as_slice();
        let first: Sample = read_message(&mut input).await.unwrap().unwrap();
        let second: u32 = read_message(&mut input).await.unwrap().unwrap();
        assert_eq!(first, sample());
        assert_eq!(second, 42);
        assert!(read_frame(&mut input).await.unwrap().is_none(), "clean end");
    });
}

#[test]
fn frame_round_trips_through_the_decoder_byte_by_byte() {
    let frame = encode_frame(&sample()).unwrap();
    let mut dec = FrameDecoder::new();
    for (i, b) in frame.iter().enumerate() {
        assert!(dec.pop().unwrap().is_none(), "no frame before byte {i}");
        dec.push(&[*b]).unwrap();
    }
    assert_eq!(dec.pop_message::<Sample>().unwrap(), Some(sample()));
    assert_eq!(dec.buffered(), 0);
}

#[test]
fn several_frames_in_one_push() {
    let mut bytes = encode_frame(&1u8).unwrap();
    bytes.extend(encode_frame(&"two").unwrap());
    bytes.extend(&encode_frame(&3u64).unwrap()[..2]);
    let mut dec = FrameDecoder::new();
    dec.push(&bytes).unwrap();
    assert_eq!(dec.pop_message::<u8>().unwrap(), Some(1));
    assert_eq!(dec.pop_message::<String>().unwrap().as_deref(), Some("two"));
    assert_eq!(dec.pop().unwrap(), None);
    assert_eq!(dec.buffered(), 2);
}

#[test]
fn exactly_the_limit_is_accepted() {
    let payload = vec![0xA5u8; MAX_FRAME];
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let written = rt.block_on(async {
        let mut out = Vec::new();
        write_frame(&mut out, &payload).await.unwrap();
        let mut input = out.as_slice();
        let back = read_frame(&mut input).await.unwrap().unwrap();
        assert_eq!(back.len(), MAX_FRAME);
        assert!(back == payload);
        out
    });
    assert_eq!(&written[..FRAME_HEADER], &(MAX_FRAME as u32).to_be_bytes());

    let mut dec = FrameDecoder::new();
    dec.push(&written).unwrap();
    assert_eq!(dec.pop().unwrap().map(|p| p.len()), Some(MAX_FRAME));
    assert!(dec.capacity() <= MAX_BUFFERED);

    // bincode's decode budget is the same 16 MiB, counting integers at their in-memory width: a
    // byte vector's length counts 8, so 8 + (MAX_FRAME - 8) bytes is exactly the budget...
    let at_budget = byte_vec_payload(MAX_FRAME - 8);
    assert_eq!(decode::<Vec<u8>>(&at_budget).unwrap().len(), MAX_FRAME - 8);
    // ...and one byte more is refused.
    let past_budget = byte_vec_payload(MAX_FRAME - 7);
    assert!(matches!(
        decode::<Vec<u8>>(&past_budget),
        Err(WireError::Malformed(_))
    ));
}

/// The encoding of a `Vec<u8>` of `len` bytes, its length as varint marker 252 + u32.
fn byte_vec_payload(len: usize) -> Vec<u8> {
    let mut out = vec![252u8];
    out.extend_from_slice(&(len as u32).to_le_bytes());
    out.resize(5 + len, 7);
    out
}

#[test]
fn one_past_the_limit_is_refused_before_allocating() {
    let header = (MAX_FRAME as u32 + 1).to_be_bytes();

    // The stream holds only the prefix: a refusal that tried to read (or allocate) the payload
    // would report truncation instead.
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    rt.block_on(async {
        let mut input = &header[..];
        let err = read_frame(&mut input).await.unwrap_err();
        assert!(matches!(err, WireError::TooLarge { len } if len == MAX_FRAME as u64 + 1));
        let mut input = &[0xFF, 0xFF, 0xFF, 0xFF][..];
        assert!(matches!(
            read_frame(&mut input).await.unwrap_err(),
            WireError::TooLarge { .. }
        ));
    });

    let mut dec = FrameDecoder::new();
    let err = dec.push(&header).unwrap_err();
    assert!(matches!(err, WireError::TooLarge { .. }));
    assert_eq!(dec.capacity(), 0, "nothing kept after a refusal");
    assert!(matches!(dec.push(b"more"), Err(WireError::Poisoned)));
    assert!(matches!(dec.pop(), Err(WireError::Poisoned)));
}

#[test]
fn encoding_past_the_limit_is_refused() {
    let too_big = vec![1u8; MAX_FRAME];
    assert!(matches!(encode(&too_big), Err(WireError::TooLarge { .. })));
}

#[test]
fn a_lying_inner_length_cannot_allocate() {
    // Claims a 1 TiB string in a 20-byte payload: without the decode limit bincode would try to
    // allocate it and abort the process.
    let payload = lying_string(1 << 40, b"short");
    assert!(matches!(
        decode::<String>(&payload),
        Err(WireError::Malformed(_))
    ));
    let payload = lying_string(MAX_FRAME as u64 + 1, b"short");
    assert!(matches!(
        decode::<Vec<u8>>(&payload),
        Err(WireError::Malformed(_))
    ));
    // A container of structs claiming u64::MAX elements.
    let payload = lying_string(u64::MAX, &[]);
    assert!(decode::<Vec<Sample>>(&payload).is_err());
}

#[test]
fn truncated_input_is_an_error() {
    let payload = encode(&sample()).unwrap();
    for cut in 0..payload.len() {
        assert!(
            decode::<Sample>(&payload[..cut]).is_err(),
            "cut at {cut} decoded"
        );
    }
    let frame = encode_frame(&sample()).unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    rt.block_on(async {
        for cut in 1..frame.len() {
            let mut input = &frame[..cut];
            assert!(
                matches!(read_frame(&mut input).await, Err(WireError::Truncated)),
                "cut at {cut}"
            );
        }
    });
}

#[test]
fn newer_peer_fields_and_kinds_are_tolerated() {
    let newer = SampleV2 {
        id: 1,
        name: "m".to_owned(),
        bytes: vec![],
        rows: BTreeMap::new(),
        maybe: None,
        kind: KindV2::Newer {
            count: 3,
            note: "from the future".to_owned(),
        },
        added: "ignored".to_owned(),
    };
    let old: Sample = decode(&encode(&newer).unwrap()).unwrap();
    assert_eq!(old.id, 1);
    assert_eq!(old.kind, Kind::Unknown);

    let same_kind = SampleV2 {
        kind: KindV2::WithText {
            text: "t".to_owned(),
        },
        ..newer
    };
    let old: Sample = decode(&encode(&same_kind).unwrap()).unwrap();
    assert_eq!(
        old.kind,
        Kind::WithText {
            text: "t".to_owned()
        }
    );
}

#[test]
fn a_malformed_frame_poisons_only_its_decoder() {
    let mut bad = FrameDecoder::new();
    bad.push(&encode_frame(&"not a number").unwrap()).unwrap();
    assert!(bad.pop_message::<Sample>().is_err());
    assert!(matches!(bad.pop(), Err(WireError::Poisoned)));

    let mut good = FrameDecoder::new();
    good.push(&encode_frame(&5u8).unwrap()).unwrap();
    assert_eq!(good.pop_message::<u8>().unwrap(), Some(5));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// Arbitrary bytes in arbitrary pieces: no panic, and the decoder never holds more than one
    /// frame in progress plus the piece just pushed.
    #[test]
    fn decoder_survives_arbitrary_bytes(
        chunks in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..64), 0..32),
    ) {
        let mut dec = FrameDecoder::new();
        for chunk in &chunks {
            if dec.push(chunk).is_err() {
                break;
            }
            prop_assert!(dec.buffered() <= FRAME_HEADER + MAX_FRAME + chunk.len());
            prop_assert!(dec.capacity() <= MAX_BUFFERED);
            loop {
                match dec.pop() {
                    Ok(Some(frame)) => {
                        prop_assert!(frame.len() <= MAX_FRAME);
                        let _ = decode::<Sample>(&frame);
                    }
                    Ok(None) => break,
                    Err(_) => break,
                }
            }
            prop_assert!(dec.buffered() < FRAME_HEADER + MAX_FRAME);
        }
    }

    /// Arbitrary payloads never panic the decoder, whatever lengths they claim.
    #[test]
    fn decode_survives_arbitrary_bytes(bytes in proptest::collection::vec(any::<u8>(), 0..256)) {
        let _ = decode::<Sample>(&bytes);
        let _ = decode::<Vec<String>>(&bytes);
        let _ = decode::<BTreeMap<u64, Vec<u8>>>(&bytes);
    }

    /// Payloads that start with a huge length claim and continue with arbitrary bytes.
    #[test]
    fn decode_survives_lying_lengths(
        len in any::<u64>(),
        body in proptest::collection::vec(any::<u8>(), 0..64),
    ) {
        let payload = lying_string(len, &body);
        let _ = decode::<String>(&payload);
        let _ = decode::<Vec<Sample>>(&payload);
    }

    /// Valid frames split at arbitrary points come back whole and in order.
    #[test]
    fn frames_survive_any_split(
        ids in proptest::collection::vec(any::<u64>(), 1..8),
        cuts in proptest::collection::vec(1usize..40, 1..20),
    ) {
        let mut stream = Vec::new();
        for id in &ids {
            stream.extend(encode_frame(&Sample { id: *id, ..sample() }).unwrap());
        }
        let mut dec = FrameDecoder::new();
        let mut got = Vec::new();
        let mut rest = stream.as_slice();
        let mut cut = cuts.iter().cycle();
        while !rest.is_empty() {
            let n = (*cut.next().unwrap()).min(rest.len());
            dec.push(&rest[..n]).unwrap();
            rest = &rest[n..];
            while let Some(s) = dec.pop_message::<Sample>().unwrap() {
                got.push(s.id);
            }
        }
        prop_assert_eq!(got, ids);
        prop_assert_eq!(dec.buffered(), 0);
    }

    /// A stream of valid frames damaged anywhere (a prefix made huge, cut short, bits flipped):
    /// the splitter and the stream reader end with frames or a refusal, never a panic, and
    /// neither holds more than the limit allows (docs/decisions/0063).
    #[test]
    fn damaged_frame_streams_are_refused_within_the_limit(
        stream in crate::fuzzing::mutated_from(
            proptest::collection::vec(any::<u64>(), 1..4).prop_map(|ids| {
                ids.iter()
                    .flat_map(|id| encode_frame(&Sample { id: *id, ..sample() }).unwrap())
                    .collect::<Vec<u8>>()
            }),
        ),
    ) {
        let mut dec = FrameDecoder::new();
        if dec.push(&stream).is_ok() {
            while let Ok(Some(s)) = dec.pop_message::<Sample>() {
                prop_assert!(encode(&s).unwrap().len() <= MAX_FRAME);
            }
        }
        prop_assert!(dec.capacity() <= MAX_BUFFERED);
        let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
        let mut input = stream.as_slice();
        rt.block_on(async {
            // Each frame read holds at most what arrived: the input is small, so is the buffer.
            while let Ok(Some(frame)) = read_frame(&mut input).await {
                assert!(frame.capacity() <= 2 * (stream.len() + 64 * 1024));
                let _ = decode::<Sample>(&frame);
            }
        });
    }
}
