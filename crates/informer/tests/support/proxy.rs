//! A TCP forwarder between the informer's client and the sim that the test can cut: while
//! paused it drops every connection, as a network partition would, so the informer misses
//! whatever happens meanwhile and must relist.

use std::{
    net::SocketAddr,
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
    },
};

use parking_lot::Mutex;
use tokio::{
    net::{TcpListener, TcpStream},
    task::AbortHandle,
};

pub struct Proxy {
    addr: SocketAddr,
    paused: Arc<AtomicBool>,
    connections: Arc<Mutex<Vec<AbortHandle>>>,
    accept_loop: AbortHandle,
}

impl Proxy {
    /// Starts forwarding 127.0.0.1:<random> to `upstream`.
    pub async fn start(upstream: SocketAddr) -> std::io::Result<Proxy> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let paused = Arc::new(AtomicBool::new(false));
        let connections: Arc<Mutex<Vec<AbortHandle>>> = Arc::default();
        let accept_loop = tokio::spawn({
            let paused = paused.clone();
            let connections = connections.clone();
            async move {
                while let Ok((mut inbound, _)) = listener.accept().await {
                    if paused.load(Ordering::SeqCst) {
                        drop(inbound);
                        continue;
                    }
                    let forward = tokio::spawn(async move {
                        if let Ok(mut outbound) = TcpStream::connect(upstream).await {
                            let _ =
                                tokio::io::copy_bidirectional(&mut inbound, &mut outbound).await;
                        }
                    });
                    connections.lock().push(forward.abort_handle());
                }
            }
        })
        .abort_handle();
        Ok(Proxy {
            addr,
            paused,
            connections,
            accept_loop,
        })
    }

    /// A client that talks to the sim through this proxy.
    pub fn client(&self) -> kube::Client {
        let url = format!("http://{}", self.addr).parse().expect("valid url");
        kube::Client::try_from(kube::Config::new(url)).expect("client from config")
    }

    /// Cuts every open connection and refuses new ones until [`Proxy::resume`].
    pub fn pause(&self) {
        self.paused.store(true, Ordering::SeqCst);
        for connection in self.connections.lock().drain(..) {
            connection.abort();
        }
    }

    pub fn resume(&self) {
        self.paused.store(false, Ordering::SeqCst);
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.accept_loop.abort();
        for connection in self.connections.lock().drain(..) {
            connection.abort();
        }
    }
}
