package testredis

import (
	"context"
	"strconv"
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
// reports cluster_state:ok. Without redis-server a test skips, unless CI
// is set: then it fails.
//
// The nodes are joined as redis-cli --cluster create joins them: each is
// given a third of the slots, and the first meets the others. That
// command would wait a second between its checks of the join; the nodes'
// own report comes sooner.
func StartCluster(t testing.TB, o Options) *Cluster {
	t.Helper()
	o.Cluster = true
	c := &Cluster{}
	for range 3 {
		c.Nodes = append(c.Nodes, Start(t, o))
	}
	ctx, cancel := context.WithTimeout(context.Background(), clusterReady)
	defer cancel()
	const slots = 16384
	for i, s := range c.Nodes {
		rdb := s.client()
		err := rdb.ClusterAddSlotsRange(ctx, i*slots/len(c.Nodes), (i+1)*slots/len(c.Nodes)-1).Err()
		if err == nil && i > 0 {
			// The bus's port is not the default, the port plus 10000,
			// which may be past the last port.
			first := c.Nodes[0].client()
			err = first.Do(ctx, "cluster", "meet", "127.0.0.1", strconv.Itoa(s.port), strconv.Itoa(s.bus)).Err()
			first.Close()
		}
		rdb.Close()
		if err != nil {
			t.Fatalf("joining the node %s to the cluster: %v", s.Addr(), err)
		}
	}
	c.WaitOK(t)
	return c
}

// client is a client of the server alone.
func (s *Server) client() *redis.Client {
	return redis.NewClient(&redis.Options{Addr: s.Addr(), Protocol: 2})
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

// WaitOK returns once every node reports cluster_state:ok and knows the
// master of each slot: the slots are all served and the nodes agree on
// who serves them. With PartialCoverage a node reports ok before it
// learned the other nodes' slots, and refuses their keys meanwhile
// (CLUSTERDOWN Hash slot not served).
func (c *Cluster) WaitOK(t testing.TB) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), clusterReady)
	defer cancel()
	for _, s := range c.Nodes {
		rdb := s.client()
		for {
			info, err := rdb.ClusterInfo(ctx).Result()
			if err == nil && strings.Contains(info, "cluster_state:ok") &&
				strings.Contains(info, "cluster_slots_assigned:16384\r\n") {
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
