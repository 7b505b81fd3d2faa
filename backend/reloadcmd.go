package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/adlink/adlink/backend/api"
	"github.com/adlink/adlink/backend/config"
)

// reloadTimeout is how long adlink reload waits for the refresh by
// default: below docs/adlink.service's TimeoutStartSec (20 min), which
// bounds ExecReload, so that the command, not systemd's kill, says why.
const reloadTimeout = 15 * time.Minute

// runReload is "adlink reload": it asks the server on this machine to
// refresh its catalog and its partners and advertisers files
// (POST /admin/reload on its admin listener) and returns once the
// refresh has ended, printing how. A refresh refused or failed, which
// keeps what was served, is an error. As ExecReload of
// docs/adlink.service, it makes systemctl reload return only once the
// refreshed catalog is served, and fail when it is not: SIGHUP alone
// returns at once, and systemd before 253 has no Type=notify-reload to
// wait on the server's READY=1.
func runReload(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("adlink reload", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := cmp.Or(getenv("ADLINK_ADMIN_ADDR"), config.Default().AdminAddr)
	fs.StringVar(&addr, "admin-addr", addr, "the server's admin listen `address`, as the server was given it (ADLINK_ADMIN_ADDR)")
	timeout := fs.Duration("timeout", reloadTimeout, "longest `time` to wait for the refresh's end")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("reload: unexpected argument %q", fs.Arg(0))
	}
	if *timeout <= 0 {
		return fmt.Errorf("reload: -timeout %v: want a time above 0", *timeout)
	}
	target, err := reloadURL(addr)
	if err != nil {
		return fmt.Errorf("reload: -admin-addr %q: %w", addr, err)
	}
	ctx, cancel := context.WithTimeoutCause(ctx, *timeout, fmt.Errorf("the refresh did not end within %v (-timeout)", *timeout))
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, target, nil)
	if err != nil {
		return fmt.Errorf("reload: %w", err)
	}
	// No proxy: the admin listener is the machine's own.
	client := &http.Client{Transport: &http.Transport{}}
	res, err := client.Do(req)
	if errors.Is(err, syscall.ECONNREFUSED) {
		// ExecStart's -admin-addr, which ExecReload does not see.
		return fmt.Errorf("reload: %w: no admin listener on %s; give adlink reload the server's -admin-addr (ADLINK_ADMIN_ADDR), or start the server", err, addr)
	}
	if err != nil {
		return fmt.Errorf("reload: %w", timedOut(ctx, err))
	}
	defer res.Body.Close()
	body, err := io.ReadAll(io.LimitReader(res.Body, 1<<20))
	if err != nil {
		return fmt.Errorf("reload: reading the answer of %s: %w", target, timedOut(ctx, err))
	}
	var ans api.Reload
	switch res.StatusCode {
	case http.StatusOK, http.StatusConflict, http.StatusBadGateway:
		if err := json.Unmarshal(body, &ans); err == nil && ans.Result != "" {
			break
		}
		fallthrough
	default:
		var e struct{ Error struct{ Message string } }
		if json.Unmarshal(body, &e) == nil && e.Error.Message != "" {
			return fmt.Errorf("reload: %s answered %s: %s", target, res.Status, e.Error.Message)
		}
		return fmt.Errorf("reload: %s answered %s: %.200q", target, res.Status, body)
	}
	fmt.Fprintln(stdout, reloadLine(ans))
	if res.StatusCode != http.StatusOK {
		var why []string
		for _, s := range []string{ans.Error, ans.AccountsError} {
			if s != "" {
				why = append(why, s)
			}
		}
		return fmt.Errorf("reload: refresh %s, what was served stays: %s", reloadOutcome(ans), strings.Join(why, "; "))
	}
	return nil
}

// reloadURL is the URL of POST /admin/reload at addr, the admin
// listener's address as the server was given it: a listener on every
// address (":9464", "0.0.0.0:9464", "[::]:9464") is asked on loopback.
func reloadURL(addr string) (string, error) {
	if addr == "" {
		return "", errors.New("the server has no admin listener (-admin-addr ''): give it one, such as 127.0.0.1:9464")
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", errors.New("want host:port")
	}
	if ip, err := netip.ParseAddr(host); host == "" || err == nil && ip.IsUnspecified() {
		host = "127.0.0.1"
		if ip.Is6() {
			host = "::1"
		}
	}
	return "http://" + net.JoinHostPort(host, port) + "/admin/reload", nil
}

// reloadOutcome is the worst of a refresh's results, the catalog's and
// the accounts files': failed, refused, else the catalog's.
func reloadOutcome(r api.Reload) string {
	results := []string{r.Result, r.Accounts, r.Partners, r.Advertisers}
	for _, worst := range []string{"failed", "refused"} {
		for _, s := range results {
			if s == worst {
				return worst
			}
		}
	}
	return r.Result
}

// reloadLine says in one line how a refresh ended and what is served.
func reloadLine(r api.Reload) string {
	line := "catalog " + r.Result + ": version " + r.Version + ", " + strconv.Itoa(r.Ads) + " ads"
	if r.Accounts != "" {
		line += "; accounts " + r.Accounts
	}
	return line
}
