//! Reading a child's output line by line without letting an endless line grow memory: what the
//! tmux control clients and the zellij subscriptions read.

use tokio::io::{AsyncBufRead, AsyncBufReadExt};

/// Reads one line (without `\n`) into `buf`, keeping at most `max` + 1 bytes of it — a line
/// longer than `max` is seen as such (`buf.len() > max`) and the rest of it skipped. Returns false
/// at the end of the stream.
pub async fn read_line_limited<R: AsyncBufRead + Unpin>(
    reader: &mut R,
    buf: &mut Vec<u8>,
    max: usize,
) -> std::io::Result<bool> {
    let mut seen_any = false;
    loop {
        let available = reader.fill_buf().await?;
        if available.is_empty() {
            return Ok(seen_any);
        }
        seen_any = true;
        let (chunk, done) = match available.iter().position(|b| *b == b'\n') {
            Some(i) => (&available[..i], Some(i + 1)),
            None => (available, None),
        };
        let room = (max + 1).saturating_sub(buf.len());
        buf.extend_from_slice(&chunk[..chunk.len().min(room)]);
        let used = done.unwrap_or(available.len());
        reader.consume(used);
        if done.is_some() {
            return Ok(true);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn lines_are_read_and_a_long_one_is_cut() {
        let mut input: &[u8] = b"one\nabcdefgh\nlast";
        let mut buf = Vec::new();
        assert!(read_line_limited(&mut input, &mut buf, 5)
            .await
            .expect("read"));
        assert_eq!(buf, b"one");
        buf.clear();
        assert!(read_line_limited(&mut input, &mut buf, 5)
            .await
            .expect("read"));
        assert_eq!(buf, b"abcdef", "max + 1 bytes kept: seen as too long");
        buf.clear();
        assert!(read_line_limited(&mut input, &mut buf, 5)
            .await
            .expect("read"));
        assert_eq!(buf, b"last");
        buf.clear();
        assert!(!read_line_limited(&mut input, &mut buf, 5)
            .await
            .expect("read"));
    }
}
