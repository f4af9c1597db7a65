//! A body stored whole, as vulcand/multibuf stores it for Traefik's `buffering`: the first bytes
//! in memory, the rest in an unlinked temporary file, so a large upload costs disk instead of
//! memory; read back as often as the request is replayed.

use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, ready};

use bytes::{Bytes, BytesMut};
use hyper::body::{Frame, SizeHint};

/// Bytes gathered before one write to the file, and read back per frame.
const FILE_CHUNK: usize = 64 * 1024;

/// A body being stored.
#[derive(Debug)]
pub(crate) struct Spill {
    mem: BytesMut,
    mem_cap: usize,
    file: Option<Arc<std::fs::File>>,
    file_len: u64,
    pending: BytesMut,
}

impl Spill {
    /// Holds up to `mem_cap` bytes in memory.
    pub(crate) fn new(mem_cap: u64) -> Self {
        let mem_cap = usize::try_from(mem_cap).unwrap_or(usize::MAX);
        Self {
            mem: BytesMut::new(),
            mem_cap,
            file: None,
            file_len: 0,
            pending: BytesMut::new(),
        }
    }

    /// Bytes stored so far.
    pub(crate) fn len(&self) -> u64 {
        self.mem.len() as u64 + self.file_len + self.pending.len() as u64
    }

    /// Stores `data` after what came before.
    pub(crate) async fn push(&mut self, mut data: Bytes) -> io::Result<()> {
        let room = self.mem_cap.saturating_sub(self.mem.len());
        if room > 0 {
            let take = room.min(data.len());
            self.mem.extend_from_slice(&data.split_to(take));
        }
        if data.is_empty() {
            return Ok(());
        }
        self.pending.extend_from_slice(&data);
        if self.pending.len() >= FILE_CHUNK {
            self.flush().await?;
        }
        Ok(())
    }

    /// Writes the pending bytes to the file, creating it the first time.
    async fn flush(&mut self) -> io::Result<()> {
        if self.pending.is_empty() {
            return Ok(());
        }
        let file = match &self.file {
            Some(f) => Arc::clone(f),
            None => {
                // Unlinked at once (O_TMPFILE where the file system has it): nothing is left
                // behind when the process dies.
                let f = Arc::new(blocking(tempfile::tempfile).await?);
                self.file = Some(Arc::clone(&f));
                f
            }
        };
        let buf = self.pending.split().freeze();
        let at = self.file_len;
        let n = buf.len() as u64;
        blocking(move || std::os::unix::fs::FileExt::write_all_at(&*file, &buf, at)).await?;
        self.file_len += n;
        Ok(())
    }

    /// The body, complete.
    pub(crate) async fn finish(mut self) -> io::Result<Stored> {
        self.flush().await?;
        Ok(Stored {
            mem: self.mem.freeze(),
            file: self.file.map(|f| (f, self.file_len)),
        })
    }
}

/// Runs file work on the blocking pool.
async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> io::Result<T> + Send + 'static,
) -> io::Result<T> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| io::Error::other(format!("file task: {e}")))?
}

/// A stored body; cloning it shares the bytes and the file.
#[derive(Debug, Clone, Default)]
pub(crate) struct Stored {
    mem: Bytes,
    file: Option<(Arc<std::fs::File>, u64)>,
}

impl Stored {
    /// The body's length.
    pub(crate) fn len(&self) -> u64 {
        self.mem.len() as u64 + self.file.as_ref().map_or(0, |(_, n)| *n)
    }

    /// The body held nothing.
    pub(crate) fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The whole body when it is all in memory (no file read needed to send it).
    pub(crate) fn in_memory(&self) -> Option<Bytes> {
        self.file.is_none().then(|| self.mem.clone())
    }

    /// A reader of the body from its start.
    pub(crate) fn reader(&self) -> Reader {
        Reader {
            mem: (!self.mem.is_empty()).then(|| self.mem.clone()),
            file: self.file.clone(),
            offset: 0,
            reading: None,
            left: self.len(),
        }
    }
}

/// A stored body read as an HTTP body: the memory part in one frame, then the file in chunks
/// read on the blocking pool.
#[derive(Debug)]
pub struct Reader {
    mem: Option<Bytes>,
    file: Option<(Arc<std::fs::File>, u64)>,
    offset: u64,
    reading: Option<tokio::task::JoinHandle<io::Result<Bytes>>>,
    left: u64,
}

impl Reader {
    fn poll_chunk(&mut self, cx: &mut Context<'_>) -> Poll<Option<io::Result<Bytes>>> {
        if let Some(mem) = self.mem.take() {
            self.left -= mem.len() as u64;
            return Poll::Ready(Some(Ok(mem)));
        }
        let Some((file, len)) = &self.file else {
            return Poll::Ready(None);
        };
        if self.offset >= *len {
            return Poll::Ready(None);
        }
        let reading = self.reading.get_or_insert_with(|| {
            let (file, at) = (Arc::clone(file), self.offset);
            let want = usize::try_from((*len - at).min(FILE_CHUNK as u64)).unwrap_or(FILE_CHUNK);
            tokio::task::spawn_blocking(move || {
                let mut buf = vec![0; want];
                std::os::unix::fs::FileExt::read_exact_at(&*file, &mut buf, at)?;
                Ok(Bytes::from(buf))
            })
        });
        let read = ready!(Pin::new(reading).poll(cx));
        self.reading = None;
        let chunk = match read {
            Ok(Ok(chunk)) => chunk,
            Ok(Err(e)) => return Poll::Ready(Some(Err(e))),
            Err(e) => return Poll::Ready(Some(Err(io::Error::other(e.to_string())))),
        };
        self.offset += chunk.len() as u64;
        self.left -= chunk.len() as u64;
        Poll::Ready(Some(Ok(chunk)))
    }
}

use std::future::Future as _;

impl hyper::body::Body for Reader {
    type Data = Bytes;
    type Error = io::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, io::Error>>> {
        self.get_mut()
            .poll_chunk(cx)
            .map(|c| c.map(|r| r.map(Frame::data)))
    }

    fn is_end_stream(&self) -> bool {
        self.left == 0
    }

    fn size_hint(&self) -> SizeHint {
        SizeHint::with_exact(self.left)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "test code: a panic is a test failure")]

    use http_body_util::BodyExt as _;

    use super::*;

    async fn store(mem_cap: u64, pieces: &[&[u8]]) -> Stored {
        let mut s = Spill::new(mem_cap);
        for p in pieces {
            s.push(Bytes::copy_from_slice(p)).await.unwrap();
        }
        s.finish().await.unwrap()
    }

    async fn read_all(s: &Stored) -> Vec<u8> {
        s.reader().collect().await.unwrap().to_bytes().to_vec()
    }

    #[tokio::test]
    async fn memory_only_body_reads_back_without_a_file() {
        let s = store(16, &[b"hello ", b"world"]).await;
        assert_eq!(s.len(), 11);
        assert!(s.in_memory().is_some());
        assert_eq!(read_all(&s).await, b"hello world");
    }

    #[tokio::test]
    async fn bytes_past_the_memory_size_go_to_the_file_and_read_back_in_order_twice() {
        let big: Vec<u8> = (0..200_000u32).map(|i| (i % 251) as u8).collect();
        let s = store(1000, &[&big[..500], &big[500..150_000], &big[150_000..]]).await;
        assert_eq!(s.len(), 200_000);
        assert!(
            s.in_memory().is_none(),
            "past 1000 bytes a file holds the rest"
        );
        // A replay reads the same bytes again.
        assert_eq!(read_all(&s).await, big);
        assert_eq!(read_all(&s).await, big);
        let r = s.reader();
        assert_eq!(hyper::body::Body::size_hint(&r).exact(), Some(200_000));
    }

    #[tokio::test]
    async fn an_empty_body_is_at_its_end_at_once() {
        let s = store(0, &[]).await;
        assert!(s.is_empty());
        assert!(hyper::body::Body::is_end_stream(&s.reader()));
        assert_eq!(read_all(&s).await, b"");
    }
}
