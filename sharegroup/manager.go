package sharegroup

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Manager is every share group this node coordinates.
type Manager struct {
	cfg Config
}

// New builds a manager.
func New(cfg Config) *Manager { return &Manager{cfg: cfg} }

// Heartbeat answers a ShareGroupHeartbeat v1.
func (m *Manager) Heartbeat(ctx context.Context, cl Client, req *kmsg.ShareGroupHeartbeatRequest) *kmsg.ShareGroupHeartbeatResponse {
	resp := req.ResponseKind().(*kmsg.ShareGroupHeartbeatResponse)
	resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
	return resp
}

// Describe answers a ShareGroupDescribe v0-1.
func (m *Manager) Describe(ctx context.Context, cl Client, req *kmsg.ShareGroupDescribeRequest) *kmsg.ShareGroupDescribeResponse {
	return req.ResponseKind().(*kmsg.ShareGroupDescribeResponse)
}

// Member is 0 when member is a current member of share group group, else
// the code ShareFetch answers.
func (m *Manager) Member(ctx context.Context, kv KV, group, member string) int16 {
	return kerr.UnknownMemberID.Code
}

// State reports whether group is a share group and whether it has no
// members.
func (m *Manager) State(ctx context.Context, kv KV, group string) (exists, empty bool, err error) {
	return false, false, nil
}

// Subscribed is the topic names the group's members subscribe to.
func (m *Manager) Subscribed(ctx context.Context, kv KV, group string) ([]string, error) {
	return nil, nil
}
