package wardredis_test

import (
	"context"
	"errors"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/wardgo/ward/breaker"
	wardredis "github.com/wardgo/ward/contrib/redis"
	"github.com/wardgo/ward/internal/testkit"
)

// cluster starts a Redis Cluster of three masters, no replicas, each owning a third of the
// slots; a dead master's slots stay its own (no failover) and the others keep serving theirs.
func cluster(t *testing.T) []*testkit.Redis {
	t.Helper()
	path, err := testkit.RedisPath()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	ranges := [][2]int{{0, 5460}, {5461, 10922}, {10923, 16383}}
	nodes := make([]*testkit.Redis, len(ranges))
	ctx, cancel := context.WithTimeout(context.Background(), patient)
	defer cancel()
	for i, r := range ranges {
		s, err := testkit.StartRedis(path, 0, "--cluster-enabled", "yes",
			"--cluster-config-file", filepath.Join(dir, "nodes-"+strconv.Itoa(i)+".conf"),
			"--cluster-node-timeout", "600000", "--cluster-require-full-coverage", "no")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(s.Stop)
		nodes[i] = s
		must(t, client(t, s), "CLUSTER", "ADDSLOTSRANGE", r[0], r[1])
	}
	first := client(t, nodes[0])
	for _, s := range nodes[1:] {
		must(t, first, "CLUSTER", "MEET", "127.0.0.1", s.Port)
	}
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for _, s := range nodes {
		c := client(t, s)
		for {
			info, err := c.ClusterInfo(ctx).Result()
			// Every node must know every slot's owner, not only its peers: with
			// cluster-require-full-coverage off the state reads ok before the slots have spread,
			// and a client loading its slot map from such a node routes keys to the wrong master.
			if err == nil && strings.Contains(info, "cluster_state:ok") && strings.Contains(info, "cluster_known_nodes:3") &&
				strings.Contains(info, "cluster_slots_assigned:16384") {
				break
			}
			if ctx.Err() != nil {
				t.Fatalf("the cluster never formed: %v %v", info, err)
			}
			<-tick.C
		}
	}
	return nodes
}

// TestClusterNodeDown: one dead master of three sheds its own keys' calls (its breaker opens)
// while the keys of the live masters are decided by the store, never kept from it.
func TestClusterNodeDown(t *testing.T) {
	nodes := cluster(t)
	addrs := []string{nodes[0].Addr(), nodes[1].Addr(), nodes[2].Addr()}
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs, ContextTimeoutEnabled: true,
		MaxRedirects: -1, MaxRetries: -1, DialTimeout: patient, ReadTimeout: patient, WriteTimeout: patient})
	t.Cleanup(func() { _ = cc.Close() })
	ctx := context.Background()
	l, err := wardredis.NewBucket(cc, prefix(t), 1, 1000, wait)
	if err != nil {
		t.Fatal(err)
	}
	// keys of each master: four of the dead one's, four of the others'
	var dead, live []string
	for i := 0; len(dead) < 4 || len(live) < 4; i++ {
		key := "k" + strconv.Itoa(i)
		node, err := cc.MasterForKey(ctx, prefix(t)+key)
		if err != nil {
			t.Fatal(err)
		}
		if node.Options().Addr == addrs[2] {
			if len(dead) < 4 {
				dead = append(dead, key)
			}
		} else if len(live) < 4 {
			live = append(live, key)
		}
	}
	for _, key := range append(dead, live...) {
		if d, err := l.Take(ctx, key, 1); err != nil || !d.OK {
			t.Fatalf("%s with every master up: %+v, %v", key, d, err)
		}
	}
	nodes[2].Stop()
	broken := 0
	for round := 0; round < 100 && broken < len(dead); round++ {
		broken = 0
		for _, key := range dead {
			d, err := l.Take(ctx, key, 1)
			if err == nil || d.OK {
				t.Fatalf("%s on the dead master: %+v, %v", key, d, err)
			}
			if errors.Is(err, breaker.ErrUnavailable) {
				broken++
			}
		}
		for _, key := range live {
			if d, err := l.Take(ctx, key, 1); err != nil || !d.OK || d.By != wardredis.Store {
				t.Fatalf("round %d: %s on a live master: %+v, %v", round, key, d, err)
			}
		}
	}
	if broken < len(dead) {
		t.Fatalf("the dead master's keys still pay a round trip: %d of %d kept from it in the last round (stats %+v)", broken, len(dead), l.Stats())
	}
}
