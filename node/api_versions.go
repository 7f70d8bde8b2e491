package node

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// handleApiVersions answers the version table. Finalized features are not
// sent: the facade negotiates none.
func (n *Node) handleApiVersions(_ context.Context, _ *Conn, req *kmsg.ApiVersionsRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.ApiVersionsResponse)
	resp.ApiKeys = advertisedKeys()
	return resp, nil
}

// unsupportedApiVersions is the answer to an ApiVersions version outside
// the window: UNSUPPORTED_VERSION with the table, encoded at v0 as the
// protocol prescribes, so that a client that led with a newer version (Java
// 4.x sends v4) reads the window and retries at v3.
func unsupportedApiVersions() kmsg.Response {
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.Version = 0
	resp.ErrorCode = kerr.UnsupportedVersion.Code
	resp.ApiKeys = advertisedKeys()
	return resp
}

// advertisedKeys is a copy of the table's answer, so that a response
// being encoded never aliases another's.
func advertisedKeys() []kmsg.ApiVersionsResponseApiKey {
	return append([]kmsg.ApiVersionsResponseApiKey(nil), advertised...)
}
