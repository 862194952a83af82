// Command headoffice is a small OpAMP server for trying receiptd's
// management channel ([control]) without writing Go: it lists the tills
// that connect to it, pushes a configuration fragment to the tills a label
// picks, and offers a signed release in waves, halting on a failure. It is
// an example built on opamp-go's server package, not a product: it keeps
// what it knows in memory only, and a chain runs a real server (Grafana
// Fleet Management, BindPlane, or its own on the same package:
// packaging/README.md, "Managing many tills").
//
//	headoffice [-listen 127.0.0.1:4320] [-admin 127.0.0.1:4321] [-cert FILE -key FILE]
//
// Tills connect to ws://LISTEN/v1/opamp (wss:// with -cert and -key;
// receiptd refuses plain ws:// off loopback) and download a release from
// the same address, at /releases/<its SHA-256>/<its file name>, over the
// scheme and host they connected by (https:// with -cert and -key). The
// admin address answers:
//
//	GET  /tills                 every till seen, as JSON, with its package status
//	GET  /                      the same as a table, for a person, under the release's line
//	PUT  /config?shop=017       the body (a TOML fragment) becomes the config of
//	                            every till whose labels match the query (none: all),
//	                            now and when it connects later
//	DELETE /config?shop=017     that rule goes; its tills keep what they applied
//	PUT  /release?shop=017      the body, {"file": "dist/receiptd-linux-amd64",
//	                            "version": "1.4.0", "waves": "1,5,all"}, offers that
//	                            file to the tills whose labels match (none: all),
//	                            wave by wave; 200 and GET /release's JSON, 400 saying why
//	GET  /release               the release, its waves and their tills' package status (404: none)
//	DELETE /release             the offer is withdrawn (204; 404: none)
//
// A release is a file on the head office's disk with FILE.minisig beside
// it, both read once at the PUT and held in memory, so what is served is
// what was hashed. The signature's trusted comment must read "receiptd
// <version> <goos>/<goarch>" (minisign -S -t); "version" may be left out
// and must otherwise be the comment's. "waves" (default "1,5,all") are
// numbers of tills, percentages of the tills selected when the wave starts
// ("5%", at least one), and "all" for the rest, which is always the last.
// One release at a time: a PUT replaces the one before and starts over.
//
// A wave takes connected tills, in the order of their UIDs, while it has
// room: tills whose labels match, whose os.type is the release's goos,
// that announce AcceptsPackages, and run an older version (never one on
// it or newer; a build from source, not MAJOR.MINOR.PATCH, is taken). A
// till that connects later joins the wave offered then if it has room,
// else a later one. Each till of a wave is offered PackagesAvailable: a
// top-level package "receiptd" of the version whose hash and file's
// content_hash are the file's SHA-256 and whose signature is the .minisig's
// bytes, under an all_packages_hash new at every PUT, in every answer
// until the till reports that hash. A wave is done when every till in it
// reports receiptd INSTALLED with agent_has_version the release's; then
// the next starts. An INSTALL_FAILED for this offer (reported with its
// all_packages_hash) from a till of a wave halts the release, a rollback
// ("rolled back: ...") or a refusal alike: a refusal of a file the chain
// signed means its key, file or path to the tills is wrong for every till.
// A halted release is offered to no till not in a wave; GET /release and
// the page name the till and its message. A till offered a release that
// is withdrawn (DELETE) or replaced by a PUT whose waves do not hold it
// yet is offered nothing: no package, the all_packages_hash SHA-256("").
package main

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/open-telemetry/opamp-go/protobufs"
	"github.com/open-telemetry/opamp-go/server"
	"github.com/open-telemetry/opamp-go/server/types"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "headoffice:", err)
		os.Exit(1)
	}
}

// maxFragment bounds a pushed fragment: receiptd refuses more than 1 MiB.
const maxFragment = 1 << 20

func run(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("headoffice", flag.ContinueOnError)
	fs.SetOutput(out)
	listen := fs.String("listen", "127.0.0.1:4320", "the tills' address: the OpAMP server (/v1/opamp) and the release's download (/releases/)")
	admin := fs.String("admin", "127.0.0.1:4321", "the admin address: the list of tills, the config pushes and the release")
	cert := fs.String("cert", "", "TLS certificate file (PEM): wss:// and https:// downloads instead of ws:// and http://")
	key := fs.String("key", "", "TLS key file (PEM), with -cert")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if (*cert == "") != (*key == "") {
		return errors.New("-cert and -key go together")
	}
	h := newOffice(log.New(out, "headoffice: ", log.LstdFlags))
	var tlsConfig *tls.Config
	scheme := "ws"
	if *cert != "" {
		pair, err := tls.LoadX509KeyPair(*cert, *key)
		if err != nil {
			return fmt.Errorf("load -cert and -key: %w", err)
		}
		tlsConfig, scheme = &tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12}, "wss"
	}
	tills, err := h.tillServer(tlsConfig)
	if err != nil {
		return err
	}
	tillLn, err := net.Listen("tcp", *listen)
	if err != nil {
		return fmt.Errorf("listen on -listen %s: %w", *listen, err)
	}
	ln, err := net.Listen("tcp", *admin)
	if err != nil {
		_ = tillLn.Close()
		return fmt.Errorf("listen on -admin %s: %w", *admin, err)
	}
	web := &http.Server{Handler: h.routes(), ReadHeaderTimeout: 10 * time.Second}
	var wg sync.WaitGroup
	wg.Go(func() {
		if tlsConfig != nil {
			_ = tills.ServeTLS(tillLn, "", "")
		} else {
			_ = tills.Serve(tillLn)
		}
	})
	wg.Go(func() { _ = web.Serve(ln) })
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = tills.Shutdown(sctx) // a WebSocket, hijacked, is the till's to close
		_ = web.Shutdown(sctx)
		_ = tills.Close()
		_ = web.Close()
		wg.Wait()
	}()
	fmt.Fprintf(out, "headoffice: tills connect to %s://%s/v1/opamp; the tills and config pushes at http://%s/\n",
		scheme, tillLn.Addr(), ln.Addr())
	<-ctx.Done()
	return nil
}

// tillServer is the tills' address: the OpAMP server, on opamp-go's
// handler, and the release file they download.
func (o *office) tillServer(tlsConfig *tls.Config) (*http.Server, error) {
	opamp, connContext, err := server.New(nil).Attach(server.Settings{Callbacks: types.Callbacks{
		OnConnecting: func(r *http.Request) types.ConnectionResponse {
			base := "http://" + r.Host
			if r.TLS != nil {
				base = "https://" + r.Host
			}
			return types.ConnectionResponse{Accept: true, ConnectionCallbacks: types.ConnectionCallbacks{
				OnMessage: func(ctx context.Context, conn types.Connection, msg *protobufs.AgentToServer) *protobufs.ServerToAgent {
					return o.onMessage(ctx, base, conn, msg)
				},
				OnConnectionClose: o.onClose,
			}}
		},
	}})
	if err != nil {
		return nil, fmt.Errorf("start the OpAMP server: %w", err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/v1/opamp", opamp)
	mux.HandleFunc("GET /releases/", o.download)
	return &http.Server{Handler: mux, TLSConfig: tlsConfig, ConnContext: connContext, ReadHeaderTimeout: 10 * time.Second}, nil
}

// fragmentHash is the hash a pushed fragment is known by, as the tills
// report it back (hex of its SHA-256).
func fragmentHash(body []byte) []byte {
	sum := sha256.Sum256(body)
	return sum[:]
}

func hexOf(b []byte) string { return hex.EncodeToString(b) }
