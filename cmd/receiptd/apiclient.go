package main

import (
	"context"
	"errors"
	"flag"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"strings"

	"github.com/receiptd/receiptd/internal/apiclient"
	"github.com/receiptd/receiptd/internal/config"
)

// daemonFlags are the flags of the commands that talk to a running daemon.
type daemonFlags struct {
	addr, token, config string
}

func (f *daemonFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.addr, "addr", "", "daemon address, host:port or URL (default: listen from the config)")
	fs.StringVar(&f.token, "token", "", "bearer token (default: auth.token from the config or RECEIPTD_AUTH_TOKEN)")
	fs.StringVar(&f.config, "config", "", "config file to take the address and token from")
}

// client resolves the daemon's address: -addr, else the config's listen
// (a wildcard host becomes loopback), else its Unix socket. The token is
// -token, else the config's auth.token. The config is read only when
// something is missing.
func (f *daemonFlags) client() (c *apiclient.Client, err error) {
	c = &apiclient.Client{Token: f.token, HTTP: &http.Client{Transport: &http.Transport{Proxy: nil}}}
	if f.addr != "" && f.token != "" && f.config == "" {
		c.Base, err = baseURL(f.addr)
		return c, err
	}
	lc, err := loadConfig(f.config)
	if errors.Is(err, fs.ErrPermission) {
		return nil, usagef("%v (run as root or as a member of group receiptd, or pass -addr and -token)", err)
	}
	if err != nil {
		return nil, err
	}
	if c.Token == "" {
		c.Token = lc.cfg.Auth.Token.Reveal()
	}
	switch {
	case f.addr != "":
		c.Base, err = baseURL(f.addr)
		return c, err
	case lc.cfg.Listen != "":
		c.Base, err = baseURL(config.Dialable(lc.cfg.Listen))
		return c, err
	default:
		sock := lc.cfg.ListenUnix
		c.Base = "http://localhost"
		c.HTTP.Transport = &http.Transport{Proxy: nil, DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", sock)
		}}
		return c, nil
	}
}

// baseURL is -addr as the client's base: http://host:port or
// https://host:port, no path.
func baseURL(addr string) (string, error) {
	if !strings.Contains(addr, "://") {
		addr = "http://" + addr
	}
	u, err := url.Parse(addr)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return "", usagef("-addr %q: want host:port or http://host:port", addr)
	}
	return u.Scheme + "://" + u.Host, nil
}
