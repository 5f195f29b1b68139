// Command bareproxy is the thinnest HTTP hop Go makes: an
// httputil.ReverseProxy that sends every request to one upstream and
// flushes every write at once. The load benchmark runs it next to FreeLane
// as the yardstick of what any reverse proxy costs, so it does nothing a
// router does: no parsing, no routing, no accounting.
//
// It prints its base URL ("http://127.0.0.1:PORT") on the first line of
// stdout once it accepts connections, and serves until SIGINT or SIGTERM.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/signal"
	"syscall"
	"time"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:0", "address to listen on (port 0 picks a free one)")
	upstream := flag.String("upstream", "", "origin to forward to, such as http://127.0.0.1:9000 (required)")
	quiet := flag.Bool("quiet", true, "discard the proxy's error log (clients that go away mid-stream make it log)")
	flag.Parse()
	if err := run(*listen, *upstream, *quiet); err != nil {
		fmt.Fprintln(os.Stderr, "bareproxy:", err)
		os.Exit(1)
	}
}

func run(listen, upstream string, quiet bool) error {
	target, err := url.Parse(upstream)
	if err != nil || target.Scheme == "" || target.Host == "" {
		return fmt.Errorf("-upstream must be an absolute http or https URL, got %q", upstream)
	}
	errLog := log.New(os.Stderr, "bareproxy: ", 0)
	if quiet {
		errLog = log.New(io.Discard, "", 0)
	}
	rp := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) { r.SetURL(target) },
		// A negative interval flushes after every write, which is what a
		// streaming relay has to do for time to first token not to grow.
		FlushInterval: -1,
		Transport:     newTransport(),
		ErrorLog:      errLog,
	}
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	srv := &http.Server{Handler: fullDuplex(rp), ReadHeaderTimeout: 30 * time.Second, ErrorLog: errLog}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	fmt.Println("http://" + ln.Addr().String())

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	select {
	case err := <-served:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	// Nothing is left in flight when the benchmark stops a target, so
	// closing at once loses nothing.
	if err := srv.Close(); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("close: %w", err)
	}
	return nil
}

// fullDuplex lets h go on reading the request body after it has begun
// the response. An HTTP/1 server otherwise drains and closes the body when
// the response's headers go out, and the transport's last read of a
// forwarded body (the check that it holds no more than its length) then
// fails and tears down the upstream connection in the middle of a stream:
// a stream the upstream answers quickly is cut now and then.
func fullDuplex(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = http.NewResponseController(w).EnableFullDuplex()
		h.ServeHTTP(w, r)
	})
}

// newTransport is tuned for one upstream on loopback under heavy load:
// enough idle connections kept that a closed-loop benchmark never dials
// again, no proxy from the environment, and no transparent gzip, which
// would have the proxy decompress what it should only pass along. An
// HTTPS upstream is spoken to in HTTP/2 when it offers it, as Go's
// default transport does (a transport with its own dialer must ask).
func newTransport() *http.Transport {
	return &http.Transport{
		Proxy:               nil,
		ForceAttemptHTTP2:   true,
		DialContext:         (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:        4096,
		MaxIdleConnsPerHost: 4096,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true,
	}
}
