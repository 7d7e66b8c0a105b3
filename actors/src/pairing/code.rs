//! Pairing codes (SPEC §4.1): 8 characters of Crockford base32, 40 random bits, shown as `XXXX-XXXX`.
//!
//! The alphabet is `0123456789ABCDEFGHJKMNPQRSTVWXYZ` (no I, L, O, U). What the phone sends is
//! normalized before it is compared:
//!
//! - letters are accepted in either case;
//! - dashes are ignored wherever they are, and surrounding whitespace is trimmed (whitespace inside
//!   the code is not accepted);
//! - as in Crockford's decoding rules, `I`/`i` and `L`/`l` read as `1` and `O`/`o` as `0`. A code
//!   never contains those letters, so the mapping only rescues a misread of the printed code; each
//!   input still names exactly one code and every attempt still counts against the limits (§4.2), so
//!   it gives a guesser nothing. `U` is refused, as in Crockford's rules.
//!
//! Comparison is constant-time, and `Debug` does not print the code: a pending code is a short-lived
//! credential and stays out of logs.

use std::fmt;

use rand::{CryptoRng, RngCore};
use subtle::ConstantTimeEq;

/// Number of characters in a code.
pub const CODE_LEN: usize = 8;

/// Input longer than this (in bytes) is refused before it is looked at character by character.
const MAX_INPUT_LEN: usize = 64;

const ALPHABET: &[u8; 32] = b"0123456789ABCDEFGHJKMNPQRSTVWXYZ";

/// A pairing code in canonical form: 8 uppercase characters of the Crockford alphabet.
#[derive(Clone)]
pub struct PairingCode([u8; CODE_LEN]);

impl PairingCode {
    /// A fresh code of 40 random bits. Take a cryptographic generator: the code is a credential.
    pub fn generate(rng: &mut (impl RngCore + CryptoRng)) -> PairingCode {
        let mut bytes = [0u8; 5];
        rng.fill_bytes(&mut bytes);
        let bits = bytes.iter().fold(0u64, |acc, &b| (acc << 8) | u64::from(b));
        let mut code = [0u8; CODE_LEN];
        for (i, c) in code.iter_mut().enumerate() {
            let shift = 5 * (CODE_LEN - 1 - i);
            *c = ALPHABET[((bits >> shift) & 0x1f) as usize];
        }
        PairingCode(code)
    }

    /// Reads a code as a person or a QR link gives it (see the module doc for what is accepted).
    pub fn normalize(input: &str) -> Result<PairingCode, MalformedCode> {
        let input = input.trim();
        if input.len() > MAX_INPUT_LEN {
            return Err(MalformedCode);
        }
        let mut code = [0u8; CODE_LEN];
        let mut n = 0;
        for b in input.bytes() {
            if b == b'-' {
                continue;
            }
            let c = canonical_char(b).ok_or(MalformedCode)?;
            *code.get_mut(n).ok_or(MalformedCode)? = c;
            n += 1;
        }
        if n == CODE_LEN {
            Ok(PairingCode(code))
        } else {
            Err(MalformedCode)
        }
    }

    /// The canonical 8 characters, e.g. `7K3QM9XT` (what goes into the QR link).
    pub fn as_str(&self) -> &str {
        // Only bytes of ALPHABET are ever stored, all ASCII.
        std::str::from_utf8(&self.0).expect("a pairing code is ASCII by construction")
    }

    /// The code as people read it: `XXXX-XXXX`.
    pub fn display(&self) -> String {
        let s = self.as_str();
        format!("{}-{}", &s[..4], &s[4..])
    }

    /// Constant-time equality (the time taken does not depend on where the codes differ).
    pub fn ct_eq(&self, other: &PairingCode) -> bool {
        self.0.ct_eq(&other.0).into()
    }
}

/// Uppercases and applies Crockford's aliases; `None` for bytes outside the alphabet.
fn canonical_char(b: u8) -> Option<u8> {
    let c = match b.to_ascii_uppercase() {
        b'I' | b'L' => b'1',
        b'O' => b'0',
        c => c,
    };
    ALPHABET.contains(&c).then_some(c)
}

impl PartialEq for PairingCode {
    fn eq(&self, other: &Self) -> bool {
        self.ct_eq(other)
    }
}

impl Eq for PairingCode {}

impl fmt::Debug for PairingCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("PairingCode(…)")
    }
}

/// Input that cannot be a pairing code (wrong length or a character outside the alphabet). The API
/// answers it like any wrong code: `invalid or expired code`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("invalid or expired code")]
pub struct MalformedCode;

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use rand::rngs::StdRng;
    use rand::SeedableRng;

    use super::*;

    fn code(s: &str) -> PairingCode {
        PairingCode::normalize(s).expect(s)
    }

    #[test]
    fn generated_codes_use_the_alphabet_and_print_as_two_groups() {
        let mut rng = StdRng::seed_from_u64(7);
        for _ in 0..200 {
            let c = PairingCode::generate(&mut rng);
            assert_eq!(c.as_str().len(), 8);
            assert!(
                c.as_str().bytes().all(|b| ALPHABET.contains(&b)),
                "{}",
                c.as_str()
            );
            assert!(!c.as_str().contains(['I', 'L', 'O', 'U']));
            let shown = c.display();
            assert_eq!(shown.len(), 9);
            assert_eq!(&shown[4..5], "-");
            assert_eq!(shown.replace('-', ""), c.as_str());
        }
    }

    #[test]
    fn generation_is_deterministic_under_a_seeded_rng_and_uses_40_bits() {
        let a = PairingCode::generate(&mut StdRng::seed_from_u64(1));
        let b = PairingCode::generate(&mut StdRng::seed_from_u64(1));
        assert_eq!(a, b);
        // Known bytes → known code: the 40 bits are read big-endian, 5 bits a character.
        struct Bytes([u8; 5]);
        impl rand::RngCore for Bytes {
            fn next_u32(&mut self) -> u32 {
                unreachable!("generate only fills bytes")
            }
            fn next_u64(&mut self) -> u64 {
                unreachable!("generate only fills bytes")
            }
            fn fill_bytes(&mut self, dest: &mut [u8]) {
                dest.copy_from_slice(&self.0);
            }
            fn try_fill_bytes(&mut self, dest: &mut [u8]) -> Result<(), rand::Error> {
                dest.copy_from_slice(&self.0);
                Ok(())
            }
        }
        impl rand::CryptoRng for Bytes {}
        let gen = |b: [u8; 5]| PairingCode::generate(&mut Bytes(b)).as_str().to_owned();
        assert_eq!(gen([0; 5]), "00000000");
        assert_eq!(gen([0xff; 5]), "ZZZZZZZZ");
        // 00000 00001 00010 00011 00100 00101 00110 00111
        assert_eq!(gen([0x00, 0x44, 0x32, 0x14, 0xc7]), "01234567");
        // 10000 (G) eight times
        assert_eq!(gen([0x84, 0x21, 0x08, 0x42, 0x10]), "GGGGGGGG");
    }

    #[test]
    fn normalize_ignores_case_and_dashes() {
        let c = code("7K3Q-M9XT");
        assert_eq!(c.as_str(), "7K3QM9XT");
        assert_eq!(code("7k3qm9xt"), c);
        assert_eq!(code("-7k3q--m9xt-"), c);
        assert_eq!(code("  7K3Q-M9XT\n"), c);
    }

    #[test]
    fn normalize_maps_crockford_aliases() {
        assert_eq!(code("IL1O-0o1l").as_str(), "11100011");
        assert_eq!(code("iiii-oooo").as_str(), "11110000");
    }

    #[test]
    fn normalize_refuses_bad_input() {
        for bad in [
            "",
            "-",
            "7K3QM9X",
            "7K3QM9XTA",
            "7K3Q M9XT",
            "7K3QM9XU",
            "7K3QM9X!",
            "7K3QM9XÉ",
            "7K3QM9X\u{0}",
            &"-".repeat(100),
        ] {
            assert_eq!(PairingCode::normalize(bad), Err(MalformedCode), "{bad:?}");
        }
        assert_eq!(MalformedCode.to_string(), "invalid or expired code");
    }

    #[test]
    fn debug_hides_the_code() {
        let c = code("7K3QM9XT");
        assert!(!format!("{c:?}").contains("7K3Q"));
    }

    fn arb_code() -> impl Strategy<Value = String> {
        proptest::collection::vec(0usize..32, CODE_LEN)
            .prop_map(|ix| ix.into_iter().map(|i| ALPHABET[i] as char).collect())
    }

    proptest! {
        /// Any code, rewritten with random case and dashes, normalizes back to itself.
        #[test]
        fn normalize_round_trips_with_random_dashes_and_case(
            canonical in arb_code(),
            lower in proptest::collection::vec(any::<bool>(), CODE_LEN),
            dashes in proptest::collection::vec(0usize..3, CODE_LEN + 1),
        ) {
            let mut typed = String::new();
            for (i, ch) in canonical.chars().enumerate() {
                typed.push_str(&"-".repeat(dashes[i]));
                typed.push(if lower[i] { ch.to_ascii_lowercase() } else { ch });
            }
            typed.push_str(&"-".repeat(dashes[CODE_LEN]));
            let c = PairingCode::normalize(&typed).expect("a re-typed code parses");
            prop_assert_eq!(c.as_str(), canonical.as_str());
            let shown = PairingCode::normalize(&c.display()).expect("the display form parses");
            prop_assert_eq!(shown.as_str(), canonical.as_str());
        }

        /// Normalizing never panics and only ever yields canonical codes.
        #[test]
        fn normalize_of_anything_is_canonical_or_refused(s in ".{0,80}") {
            if let Ok(c) = PairingCode::normalize(&s) {
                prop_assert!(c.as_str().bytes().all(|b| ALPHABET.contains(&b)));
            }
        }
    }
}
