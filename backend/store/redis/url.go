package redisstore

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/adlink/adlink/backend/catalog"
)

// clusterSchemes are the schemes of a Redis Cluster's URL, each with the
// scheme of one node's that go-redis reads.
var clusterSchemes = map[string]string{"redis-cluster": "redis", "rediss-cluster": "rediss"}

// parsed is a URL that Open reads: one Redis's options or a cluster's,
// and the URL's query, which says which options the URL set.
type parsed struct {
	single  *redis.Options
	cluster *redis.ClusterOptions
	query   url.Values
}

// CheckURL reports whether Open can read rawURL, with an error that names
// the part that is wrong and never holds the URL, which may hold a
// password.
func CheckURL(rawURL string) error {
	_, err := parseURL(rawURL)
	return err
}

// parseURL reads a redis:// or rediss:// URL, as go-redis's ParseURL, or
// a Redis Cluster's:
//
//	redis-cluster://[user:password@]host:port[,host:port...][/0][?option=value...]
//
// (rediss-cluster:// for TLS). The addresses are nodes of the cluster the
// client learns the others from; more may follow in addr= options, and
// the options are go-redis's ParseClusterURL's. A cluster has database 0
// only.
func parseURL(rawURL string) (*parsed, error) {
	// A '/', '?' or '#' in the password ends the host early: the rest of
	// the password would be read as the database, an option or a
	// fragment, quoted in go-redis's errors, and the user name and the
	// password's start as the address, logged with every fallback.
	if catalog.MisreadUserInfo(rawURL) {
		return nil, errors.New("redis: an '@' after the host: percent-encode a '/', '?', '#' or '@' in the user name or password (%2F, %3F, %23, %40)")
	}
	scheme, rest, ok := strings.Cut(rawURL, "://")
	node, isCluster := clusterSchemes[strings.ToLower(scheme)]
	if !ok || !isCluster {
		opt, err := redis.ParseURL(rawURL)
		if err != nil {
			return nil, withoutURL(err)
		}
		u, _ := url.Parse(rawURL) // ParseURL parsed it already
		return &parsed{single: opt, query: u.Query()}, nil
	}
	// The authority ends at the path, the query or the fragment; the
	// password may hold none of them unescaped, as in any URL.
	end := strings.IndexAny(rest, "/?#")
	if end < 0 {
		end = len(rest)
	}
	authority, tail := rest[:end], rest[end:]
	userinfo, hosts := "", authority
	if at := strings.LastIndexByte(authority, '@'); at >= 0 {
		userinfo, hosts = authority[:at+1], authority[at+1:]
	}
	addrs := strings.Split(hosts, ",")
	for i, a := range addrs {
		if a == "" {
			return nil, fmt.Errorf("redis: cluster URL: address %d of %d is empty", i+1, len(addrs))
		}
		if h, p, err := net.SplitHostPort(a); err != nil || h == "" || p == "" {
			return nil, fmt.Errorf("redis: cluster URL: address %d of %d: want host:port", i+1, len(addrs))
		}
	}
	path, query, _ := strings.Cut(tail, "?")
	query, _, _ = strings.Cut(query, "#")
	path, _, _ = strings.Cut(path, "#")
	if path != "" && path != "/" && path != "/0" {
		return nil, errors.New("redis: cluster URL: a cluster has database 0 only: want no path, / or /0")
	}
	q, err := url.ParseQuery(query)
	if err != nil {
		return nil, errors.New("redis: cluster URL: the query does not parse")
	}
	// go-redis reads the first address from the URL's host and the others
	// from addr= options, after those the URL gave.
	for _, a := range addrs[1:] {
		q.Add("addr", a)
	}
	opt, err := redis.ParseClusterURL(node + "://" + userinfo + addrs[0] + "?" + q.Encode())
	if err != nil {
		return nil, withoutURL(err)
	}
	return &parsed{cluster: opt, query: q}, nil
}

// withoutURL is err without the URL a *url.Error quotes, which may hold
// a password.
func withoutURL(err error) error {
	var u *url.Error
	if errors.As(err, &u) {
		return fmt.Errorf("redis: the URL does not parse: %w", u.Err)
	}
	return err
}
