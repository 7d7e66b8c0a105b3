//! A UDP relay on loopback between one crew machine and its lead, which a test can cut and mend:
//! a partition between two real bridges that leaves every other path (HTTP, other members) as it
//! is. Real QUIC passes through it untouched; nothing is mocked.

use std::net::{SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

/// The relay; its threads stop when it is dropped.
pub struct UdpRelay {
    /// Where the machine dials (give it as the invite's `--address`).
    pub front: SocketAddr,
    cut: Arc<AtomicBool>,
    stop: Arc<AtomicBool>,
    threads: Vec<JoinHandle<()>>,
}

impl UdpRelay {
    /// A relay to `target`.
    pub fn to(target: SocketAddr) -> UdpRelay {
        let front = UdpSocket::bind("127.0.0.1:0").expect("bind the relay's front");
        let back = UdpSocket::bind("127.0.0.1:0").expect("bind the relay's back");
        back.connect(target).expect("connect the relay's back");
        for s in [&front, &back] {
            s.set_read_timeout(Some(Duration::from_millis(100)))
                .expect("timeout");
        }
        let front_addr = front.local_addr().expect("front address");
        let (cut, stop) = (Arc::<AtomicBool>::default(), Arc::<AtomicBool>::default());
        let client: Arc<Mutex<Option<SocketAddr>>> = Arc::default();
        let (front2, back2) = (
            front.try_clone().expect("clone"),
            back.try_clone().expect("clone"),
        );
        let forward = {
            let (cut, stop, client) = (Arc::clone(&cut), Arc::clone(&stop), Arc::clone(&client));
            std::thread::spawn(move || {
                let mut buf = vec![0u8; 65_536];
                while !stop.load(Ordering::Relaxed) {
                    let Ok((n, from)) = front.recv_from(&mut buf) else {
                        continue;
                    };
                    *client.lock().expect("lock") = Some(from);
                    if !cut.load(Ordering::Relaxed) {
                        let _ = back.send(&buf[..n]);
                    }
                }
            })
        };
        let backward = {
            let (cut, stop) = (Arc::clone(&cut), Arc::clone(&stop));
            std::thread::spawn(move || {
                let mut buf = vec![0u8; 65_536];
                while !stop.load(Ordering::Relaxed) {
                    let Ok(n) = back2.recv(&mut buf) else {
                        continue;
                    };
                    let to = *client.lock().expect("lock");
                    if let (Some(to), false) = (to, cut.load(Ordering::Relaxed)) {
                        let _ = front2.send_to(&buf[..n], to);
                    }
                }
            })
        };
        UdpRelay {
            front: front_addr,
            cut,
            stop,
            threads: vec![forward, backward],
        }
    }

    /// Drops every datagram from now on, both ways.
    pub fn cut(&self) {
        self.cut.store(true, Ordering::Relaxed);
    }

    /// Passes datagrams again.
    pub fn mend(&self) {
        self.cut.store(false, Ordering::Relaxed);
    }
}

impl Drop for UdpRelay {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}
