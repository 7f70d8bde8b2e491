package node

import (
	"net"

	"github.com/queen-mq/queen-kafka/coordinator"
)

// newCoordinator builds the group coordinator from the node's
// configuration. Single mode coordinates every group here; cluster mode
// fences every offset write with this node's id and a per-process
// incarnation, so that a node that lost a group without noticing can never
// overwrite its successor's commits.
func newCoordinator(n *Node) *coordinator.Coordinator {
	self := coordinator.Broker{NodeID: int32(n.cfg.NodeID), Host: n.cfg.AdvertisedHost, Port: n.cfg.AdvertisedPort}
	var own coordinator.Ownership = coordinator.Single{Node: self}
	if n.cluster != nil {
		own = clusterOwnership{n.cluster}
	}
	return coordinator.New(coordinator.Config{
		KV:                n.queen,
		Ownership:         own,
		Log:               n.log.With("component", "coordinator"),
		JoinDelay:         n.cfg.GroupJoinDelay,
		MinSessionTimeout: n.cfg.GroupMinSessionTimeout,
		MaxSessionTimeout: n.cfg.GroupMaxSessionTimeout,
		Fenced:            n.cfg.Clustered(),
		NodeID:            int32(n.cfg.NodeID),
		Incarnation:       n.Incarnation(), // the registry row's: one per process
	})
}

// groupClient is the connection as the coordinator needs it: the member's
// client id and host as DescribeGroups reports them, the identity that
// keys the group registry, and the credential its KV calls carry.
func (c *Conn) groupClient() coordinator.Client {
	host := c.RemoteAddr()
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	return coordinator.Client{ID: c.ClientID(), Host: "/" + host, Identity: c.Identity(), KV: c.Queen()}
}
