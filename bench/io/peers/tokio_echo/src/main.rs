// The echo server of examples/echo_server.h written with Tokio (Debian librust-tokio-dev):
// a peer in the echo benchmark (bench/io/echo_bench.sh), next to bench/io/asio_echo_server.cc.
// Same protocols and flags as asio_echo_server: plain byte echo by default (each read's bytes
// written back completely before the next read, through a per-connection buffer of --buffer
// bytes), and with --framed the 4-byte little-endian length + payload frames, echoed
// unchanged, the complete frames in the buffer with one write, a frame announcing more than
// --max_frame bytes disconnects. One multi-threaded runtime with --workers worker threads;
// TCP_NODELAY on every connection; listen backlog 4096 with SO_REUSEADDR.
//   tokio_echo --workers=2 --address=127.0.0.1 --port=7000 [--framed]
//              [--buffer=16384] [--max_frame=65536]
// Runs until SIGINT/SIGTERM, then exits with status 0. No idle or write deadlines (as in
// asio_echo_server: the benchmark's load generator is well-behaved).
use std::future::Future;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::process::ExitCode;
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpSocket, TcpStream};
use tokio::signal::unix::{signal, Signal, SignalKind};

const USAGE: &str = "usage: tokio_echo --workers=N --address=IP --port=P [--framed] \
                     [--buffer=BYTES] [--max_frame=BYTES]";
const HEADER: usize = 4;
const LIMIT: u64 = 1 << 30; // largest --buffer / --max_frame, as examples/echo_server.cc

#[derive(Clone, Copy)]
struct Options {
    workers: usize,
    address: IpAddr,
    port: u16,
    framed: bool,
    buffer: usize,
    max_frame: u32,
}

fn number(value: &str, low: u64, high: u64) -> Option<u64> {
    value.parse::<u64>().ok().filter(|n| (low..=high).contains(n))
}

// Every flag is --name=value except --framed; anything else is an error (None).
fn parse(args: impl Iterator<Item = String>) -> Option<Options> {
    let mut options = Options {
        workers: 2,
        address: IpAddr::from([127, 0, 0, 1]),
        port: 7000,
        framed: false,
        buffer: 16 * 1024,
        max_frame: 64 * 1024,
    };
    for arg in args {
        if arg == "--framed" {
            options.framed = true;
            continue;
        }
        let (name, value) = arg.split_once('=')?;
        match name {
            "--workers" => options.workers = number(value, 1, 1024)? as usize,
            "--address" => options.address = value.parse().ok()?,
            "--port" => options.port = number(value, 0, 65535)? as u16,
            "--buffer" => options.buffer = number(value, 1, LIMIT)? as usize,
            "--max_frame" => options.max_frame = number(value, 1, LIMIT)? as u32,
            _ => return None,
        }
    }
    Some(options)
}

// Plain: whatever one read returns is written back completely before the next read.
async fn serve_plain(mut stream: TcpStream, buffer_size: usize) -> std::io::Result<()> {
    let mut buffer = vec![0u8; buffer_size];
    loop {
        let n = stream.read(&mut buffer).await?;
        if n == 0 {
            return Ok(()); // end of stream
        }
        stream.write_all(&buffer[..n]).await?;
    }
}

// Framed: buffer[begin..end] holds received bytes not yet echoed, starting at a frame
// boundary. All complete frames go back with one write; the buffer starts at 4 + 4096 bytes
// and grows (doubling, at most one maximal frame) only when a frame does not fit.
async fn serve_framed(mut stream: TcpStream, max_frame: u32) -> std::io::Result<()> {
    let limit = HEADER + max_frame as usize;
    let mut buffer = vec![0u8; HEADER + 4096];
    let mut end = 0;
    loop {
        let mut scan = 0;
        let need = loop {
            if end - scan < HEADER {
                break HEADER;
            }
            let header = [buffer[scan], buffer[scan + 1], buffer[scan + 2], buffer[scan + 3]];
            let length = u32::from_le_bytes(header);
            if length > max_frame {
                return Ok(()); // oversized: disconnect
            }
            let frame = HEADER + length as usize;
            if end - scan < frame {
                break frame;
            }
            scan += frame;
        };
        if scan > 0 {
            stream.write_all(&buffer[..scan]).await?;
            buffer.copy_within(scan..end, 0);
            end -= scan;
        }
        if need > buffer.len() {
            let grown = need.max(buffer.len() * 2).min(limit);
            buffer.resize(grown, 0);
        }
        let n = stream.read(&mut buffer[end..]).await?;
        if n == 0 {
            return Ok(()); // end of stream
        }
        end += n;
    }
}

async fn serve(stream: TcpStream, options: Options) {
    // Errors end the connection: end of stream, reset, or a peer that went away.
    if stream.set_nodelay(true).is_err() {
        return;
    }
    let _ = if options.framed {
        serve_framed(stream, options.max_frame).await
    } else {
        serve_plain(stream, options.buffer).await
    };
}

async fn accept_loop(listener: TcpListener, options: Options) {
    loop {
        match listener.accept().await {
            Ok((stream, _)) => {
                tokio::spawn(serve(stream, options));
            }
            // The connection died before it was accepted: not the listener's problem.
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionAborted => {}
            // Anything else (e.g. out of file descriptors) stops accepting, loudly, as
            // asio_echo_server's accept coroutine ends on an error.
            Err(e) => {
                eprintln!("tokio_echo: accept failed, no longer accepting: {e}");
                return;
            }
        }
    }
}

fn listen(options: &Options) -> std::io::Result<TcpListener> {
    let address = SocketAddr::new(options.address, options.port);
    let socket = if address.is_ipv4() { TcpSocket::new_v4()? } else { TcpSocket::new_v6()? };
    socket.set_reuseaddr(true)?;
    socket.bind(address)?;
    socket.listen(4096)
}

// Completes when either signal arrives (Rust 1.63 has no std::future::poll_fn, and
// tokio::select! would need the macros feature for this one place).
struct FirstSignal {
    terminate: Signal,
    interrupt: Signal,
}

impl Future for FirstSignal {
    type Output = ();
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        // Both are polled each time, so both register for a wake-up while pending.
        let terminated = self.terminate.poll_recv(cx).is_ready();
        let interrupted = self.interrupt.poll_recv(cx).is_ready();
        if terminated || interrupted {
            Poll::Ready(())
        } else {
            Poll::Pending
        }
    }
}

async fn run(options: Options) -> std::io::Result<()> {
    let listener = listen(&options)?;
    // Installed before the server announces itself: a SIGTERM from then on is handled.
    let stop = FirstSignal {
        terminate: signal(SignalKind::terminate())?,
        interrupt: signal(SignalKind::interrupt())?,
    };
    println!(
        "tokio_echo: {} echo, {} workers, listening on {}",
        if options.framed { "framed" } else { "plain" },
        options.workers,
        listener.local_addr()?
    );
    tokio::spawn(accept_loop(listener, options));
    stop.await;
    Ok(())
}

fn main() -> ExitCode {
    let options = match parse(std::env::args().skip(1)) {
        Some(options) => options,
        None => {
            eprintln!("{USAGE}");
            return ExitCode::from(2);
        }
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(options.workers)
        .enable_io()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("tokio_echo: cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let result = runtime.block_on(run(options));
    // Connections still open are dropped (closed) with their tasks.
    runtime.shutdown_timeout(Duration::from_secs(1));
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("tokio_echo: {e}");
            ExitCode::FAILURE
        }
    }
}
