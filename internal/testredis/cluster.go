package testredis

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Cluster is a Redis Cluster of three masters and no replicas, each a
// Server of its own, with the hash slots split among them.
type Cluster struct {
	// Nodes are the masters; Kill one to take its slots away, Start it
	// to give them back.
	Nodes []*Server
}

// clusterReady bounds the wait for a new cluster to agree on its slots.
const clusterReady = 30 * time.Second

// StartCluster starts a Redis Cluster of three masters for t, on free
// loopback ports, and stops it when t ends. It returns once every node
// reports cluster_state:ok. Without redis-server or redis-cli a test
// skips, unless CI is set: then it fails.
func StartCluster(t testing.TB, o Options) *Cluster {
	t.Helper()
	cli, err := exec.LookPath("redis-cli")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("redis-cli is not installed (apt-get install redis-tools); CI is set, so this test may not skip")
		}
		t.Skip("redis-cli is not installed (apt-get install redis-tools): skipping the tests against a Redis Cluster")
	}
	o.Cluster = true
	c := &Cluster{}
	args := []string{"--cluster", "create"}
	for range 3 {
		s := Start(t, o)
		c.Nodes = append(c.Nodes, s)
		args = append(args, s.Addr())
	}
	args = append(args, "--cluster-replicas", "0", "--cluster-yes")
	if out, err := exec.Command(cli, args...).CombinedOutput(); err != nil {
		t.Fatalf("redis-cli --cluster create: %v\n%s", err, out)
	}
	c.WaitOK(t)
	return c
}

// Addrs are the nodes' host:port.
func (c *Cluster) Addrs() []string {
	var out []string
	for _, s := range c.Nodes {
		out = append(out, s.Addr())
	}
	return out
}

// URL is the cluster's redis-cluster:// URL, naming every node.
func (c *Cluster) URL() string {
	return "redis-cluster://" + strings.Join(c.Addrs(), ",")
}

// WaitOK returns once every node reports cluster_state:ok: the slots are
// all served and the nodes agree on who serves them.
func (c *Cluster) WaitOK(t testing.TB) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), clusterReady)
	defer cancel()
	for _, s := range c.Nodes {
		rdb := redis.NewClient(&redis.Options{Addr: s.Addr(), Protocol: 2})
		for {
			info, err := rdb.ClusterInfo(ctx).Result()
			if err == nil && strings.Contains(info, "cluster_state:ok") {
				break
			}
			if ctx.Err() != nil {
				rdb.Close()
				t.Fatalf("the node %s did not report cluster_state:ok within %v: %v\n%s", s.Addr(), clusterReady, err, info)
			}
			// The nodes gossip the new configuration over their bus;
			// there is no event to wait for but their own report.
			time.Sleep(10 * time.Millisecond)
		}
		rdb.Close()
	}
}
