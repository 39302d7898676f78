// The echo server of examples/echo_server.h written in Go (Debian golang-go): a peer in the
// echo benchmark (bench/io/echo_bench.sh), next to bench/io/asio_echo_server.cc. Same
// protocols and flags as asio_echo_server: plain byte echo by default (each read's bytes
// written back completely before the next read, through a per-connection buffer of --buffer
// bytes), and with --framed the 4-byte little-endian length + payload frames, echoed
// unchanged, the complete frames in the buffer with one write, a frame announcing more than
// --max_frame bytes disconnects. One goroutine per connection on Go's netpoller, with
// runtime.GOMAXPROCS(--workers); TCP_NODELAY on every connection.
//
//	go_echo --workers=2 --address=127.0.0.1 --port=7000 [--framed]
//	        [--buffer=16384] [--max_frame=65536]
//
// Runs until SIGINT/SIGTERM, then exits with status 0. No idle or write deadlines (as in
// asio_echo_server). The listen backlog is Go's: net.core.somaxconn, not 4096 (see
// ../README.md).
package main

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"os"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"syscall"
)

const (
	usage  = "usage: go_echo --workers=N --address=IP --port=P [--framed] [--buffer=BYTES] [--max_frame=BYTES]"
	header = 4
	limit  = 1 << 30 // largest --buffer / --max_frame, as examples/echo_server.cc
)

type options struct {
	workers  int
	address  string
	port     int
	framed   bool
	buffer   int
	maxFrame uint32
}

// number parses value as a decimal in [low, high].
func number(value string, low, high int64) (int64, error) {
	n, err := strconv.ParseInt(value, 10, 64)
	if err != nil || n < low || n > high {
		return 0, fmt.Errorf("%q is not a number in [%d, %d]", value, low, high)
	}
	return n, nil
}

// parse reads --name=value flags (and the bare --framed); anything else is an error.
func parse(args []string) (options, error) {
	o := options{workers: 2, address: "127.0.0.1", port: 7000, buffer: 16 * 1024, maxFrame: 64 * 1024}
	for _, arg := range args {
		if arg == "--framed" {
			o.framed = true
			continue
		}
		name, value, found := strings.Cut(arg, "=")
		if !found {
			return o, fmt.Errorf("unknown flag %q", arg)
		}
		var n int64
		var err error
		switch name {
		case "--workers":
			n, err = number(value, 1, 1024)
			o.workers = int(n)
		case "--address":
			if net.ParseIP(value) == nil {
				err = fmt.Errorf("%q is not an IP address", value)
			}
			o.address = value
		case "--port":
			n, err = number(value, 0, 65535)
			o.port = int(n)
		case "--buffer":
			n, err = number(value, 1, limit)
			o.buffer = int(n)
		case "--max_frame":
			n, err = number(value, 1, limit)
			o.maxFrame = uint32(n)
		default:
			err = fmt.Errorf("unknown flag %q", arg)
		}
		if err != nil {
			return o, fmt.Errorf("%s: %w", name, err)
		}
	}
	return o, nil
}

// servePlain writes whatever one read returns back completely before the next read.
func servePlain(conn *net.TCPConn, bufferSize int) error {
	buffer := make([]byte, bufferSize)
	for {
		n, err := conn.Read(buffer)
		if err != nil {
			return err // io.EOF at end of stream
		}
		if _, err := conn.Write(buffer[:n]); err != nil {
			return err
		}
	}
}

// serveFramed keeps buffer[:end] = received bytes not yet echoed, starting at a frame
// boundary. All complete frames go back with one write; the buffer starts at 4 + 4096 bytes
// and grows (doubling, at most one maximal frame) only when a frame does not fit.
func serveFramed(conn *net.TCPConn, maxFrame uint32) error {
	frameLimit := header + int(maxFrame)
	buffer := make([]byte, header+4096)
	end := 0
	for {
		scan, need := 0, 0
		for {
			if end-scan < header {
				need = header
				break
			}
			length := binary.LittleEndian.Uint32(buffer[scan:])
			if length > maxFrame {
				return errors.New("oversized frame") // disconnect
			}
			frame := header + int(length)
			if end-scan < frame {
				need = frame
				break
			}
			scan += frame
		}
		if scan > 0 {
			if _, err := conn.Write(buffer[:scan]); err != nil {
				return err
			}
			end = copy(buffer, buffer[scan:end])
		}
		if need > len(buffer) {
			grown := 2 * len(buffer)
			if grown < need {
				grown = need
			}
			if grown > frameLimit {
				grown = frameLimit
			}
			bigger := make([]byte, grown)
			copy(bigger, buffer[:end])
			buffer = bigger
		}
		n, err := conn.Read(buffer[end:])
		if err != nil {
			return err
		}
		end += n
	}
}

// serve runs one connection until end of stream, an error or an oversized frame.
func serve(conn *net.TCPConn, o options) {
	defer conn.Close()
	if err := conn.SetNoDelay(true); err != nil {
		return
	}
	if o.framed {
		_ = serveFramed(conn, o.maxFrame)
	} else {
		_ = servePlain(conn, o.buffer)
	}
}

// acceptLoop stops, loudly, at the first error that is not a closed listener (Go's Accept
// already retries the transient ones, e.g. ECONNABORTED), as asio_echo_server's accept
// coroutine ends on an error.
func acceptLoop(listener *net.TCPListener, o options) {
	for {
		conn, err := listener.AcceptTCP()
		if err != nil {
			if !errors.Is(err, net.ErrClosed) {
				fmt.Fprintf(os.Stderr, "go_echo: accept failed, no longer accepting: %v\n", err)
			}
			return
		}
		go serve(conn, o)
	}
}

func main() {
	o, err := parse(os.Args[1:])
	if err != nil {
		fmt.Fprintf(os.Stderr, "go_echo: %v\n%s\n", err, usage)
		os.Exit(2)
	}
	runtime.GOMAXPROCS(o.workers)
	// Installed before the server announces itself: a SIGTERM from then on is handled.
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGINT, syscall.SIGTERM)
	// Go sets SO_REUSEADDR on listening sockets itself.
	listener, err := net.Listen("tcp", net.JoinHostPort(o.address, strconv.Itoa(o.port)))
	if err != nil {
		fmt.Fprintf(os.Stderr, "go_echo: %v\n", err)
		os.Exit(1)
	}
	mode := "plain"
	if o.framed {
		mode = "framed"
	}
	fmt.Printf("go_echo: %s echo, %d workers, listening on %s\n", mode, o.workers, listener.Addr())
	go acceptLoop(listener.(*net.TCPListener), o)
	<-stop
	listener.Close()
	// Open connections close with the process.
	os.Exit(0)
}
