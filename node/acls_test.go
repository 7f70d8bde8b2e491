package node

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestAclsAnswerKafkasSentences: with no authorizer, Kafka's AclApis
// answers DescribeAcls "No Authorizer is configured on the broker" and
// CreateAcls and DeleteAcls "No Authorizer is configured.", each
// SECURITY_DISABLED.
func TestAclsAnswerKafkasSentences(t *testing.T) {
	n, _ := newTestNode(t, nil)
	c := testConn(t, n)
	d := kmsg.NewPtrDescribeACLsRequest()
	d.Version = 3
	if r := call[*kmsg.DescribeACLsResponse](t, n, c, d); r.ErrorCode != kerr.SecurityDisabled.Code || r.ErrorMessage == nil || *r.ErrorMessage != "No Authorizer is configured on the broker" {
		t.Errorf("describe: %d %v", r.ErrorCode, r.ErrorMessage)
	}
	cr := kmsg.NewPtrCreateACLsRequest()
	cr.Version = 1
	cr.Creations = make([]kmsg.CreateACLsRequestCreation, 1)
	if r := call[*kmsg.CreateACLsResponse](t, n, c, cr).Results[0]; r.ErrorCode != kerr.SecurityDisabled.Code || r.ErrorMessage == nil || *r.ErrorMessage != "No Authorizer is configured." {
		t.Errorf("create: %d %v", r.ErrorCode, r.ErrorMessage)
	}
	dl := kmsg.NewPtrDeleteACLsRequest()
	dl.Version = 2
	dl.Filters = make([]kmsg.DeleteACLsRequestFilter, 1)
	if r := call[*kmsg.DeleteACLsResponse](t, n, c, dl).Results[0]; r.ErrorCode != kerr.SecurityDisabled.Code || r.ErrorMessage == nil || *r.ErrorMessage != "No Authorizer is configured." {
		t.Errorf("delete: %d %v", r.ErrorCode, r.ErrorMessage)
	}
}
