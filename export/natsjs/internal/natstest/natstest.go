// Package natstest runs real NATS servers with JetStream in process for
// tests: one node, or a cluster of three on loopback ports whose nodes can
// be stopped and started again on their own store.
package natstest

import (
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// Node is one server of a cluster.
type Node struct {
	Opts *server.Options
	Srv  *server.Server
}

// Cluster is a set of servers routed to each other.
type Cluster struct {
	t     testing.TB
	Nodes []*Node
}

func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// Start starts n servers (1, or 3 for a cluster) with JetStream, each
// with a store under t.TempDir(), and waits until JetStream is ready.
func Start(t testing.TB, n int) *Cluster {
	t.Helper()
	c := &Cluster{t: t}
	ports := make([]int, n)
	routes := ""
	for i := range n {
		ports[i] = freePort(t)
		if i > 0 {
			routes += ","
		}
		routes += fmt.Sprintf("nats-route://127.0.0.1:%d", ports[i])
	}
	for i := range n {
		o := &server.Options{
			ServerName: fmt.Sprintf("n%d", i),
			Host:       "127.0.0.1",
			Port:       freePort(t),
			JetStream:  true,
			StoreDir:   t.TempDir(),
			MaxPayload: 8 << 20,
			NoLog:      true,
			NoSigs:     true,
		}
		if n > 1 {
			o.Cluster = server.ClusterOpts{Name: "statsblob", Host: "127.0.0.1", Port: ports[i]}
			o.Routes = server.RoutesFromStr(routes)
		}
		c.Nodes = append(c.Nodes, &Node{Opts: o})
	}
	for i := range c.Nodes {
		c.StartNode(i)
	}
	c.WaitReady()
	t.Cleanup(c.Shutdown)
	return c
}

// StartNode starts node i (again, on its store and ports).
func (c *Cluster) StartNode(i int) {
	c.t.Helper()
	s, err := server.NewServer(c.Nodes[i].Opts)
	if err != nil {
		c.t.Fatal(err)
	}
	go s.Start()
	if !s.ReadyForConnections(10 * time.Second) {
		c.t.Fatalf("node %d not ready", i)
	}
	c.Nodes[i].Srv = s
}

// StopNode shuts node i down.
func (c *Cluster) StopNode(i int) {
	if s := c.Nodes[i].Srv; s != nil {
		s.Shutdown()
		s.WaitForShutdown()
		c.Nodes[i].Srv = nil
	}
}

// WaitReady waits until JetStream has a meta leader.
func (c *Cluster) WaitReady() {
	c.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		for _, nd := range c.Nodes {
			if nd.Srv != nil && nd.Srv.JetStreamIsCurrent() && (len(c.Nodes) == 1 || nd.Srv.JetStreamIsLeader() || metaLeader(nd.Srv)) {
				return
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	c.t.Fatal("JetStream not ready")
}

func metaLeader(s *server.Server) bool {
	js := s.JetStreamIsClustered()
	return js && s.JetStreamIsCurrent()
}

// URL returns the client URLs of the running nodes, comma-separated.
func (c *Cluster) URL() string {
	u := ""
	for _, nd := range c.Nodes {
		if nd.Srv == nil {
			continue
		}
		if u != "" {
			u += ","
		}
		u += nd.Srv.ClientURL()
	}
	return u
}

// Shutdown stops every node.
func (c *Cluster) Shutdown() {
	for i := range c.Nodes {
		c.StopNode(i)
	}
}
