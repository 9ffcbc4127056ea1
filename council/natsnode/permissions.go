package natsnode

import (
	"strconv"
	"strings"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/adaptio/adaptio/council/keyring"
)

// Role is what a key may do on a Council group's subjects.
type Role int

// Roles of a group's keys (keyring.Keyring holds them).
const (
	// RoleCouncil: everything under the group's prefix, the JetStream API,
	// the group's KV bucket and replies.
	RoleCouncil Role = iota + 1
	// RoleNode: publish its own reports, subscribe to decisions and replies.
	RoleNode
	// RoleOperator: publish operator requests (<prefix>.admin), subscribe
	// to their replies.
	RoleOperator
	// RoleObserver: subscribe to decisions and reports; publish nothing.
	RoleObserver
)

// String names the role.
func (r Role) String() string {
	switch r {
	case RoleCouncil:
		return "council"
	case RoleNode:
		return "node"
	case RoleOperator:
		return "operator"
	case RoleObserver:
		return "observer"
	}
	return "role(" + strconv.Itoa(int(r)) + ")"
}

// Group names one Council group's subjects on a NATS server: the subject
// prefix (<Prefix>.report.<k>, <Prefix>.decision, <Prefix>.admin) and the
// Council's JetStream KV bucket.
type Group struct {
	Prefix string
	// Bucket is the Council's KV bucket (default CouncilBucket(Prefix)).
	Bucket string
}

// CouncilBucket is the KV bucket a Council of prefix keeps its learned
// state in by default: "adaptio_council_" and the prefix, '.' as '_'.
func CouncilBucket(prefix string) string {
	return "adaptio_council_" + strings.ReplaceAll(prefix, ".", "_")
}

// inbox is the subject space of request replies (nats.go's default).
const inbox = "_INBOX.>"

// Permissions returns the subject permissions of role in the group. node
// is the I/O node's index for RoleNode: it may publish only
// <Prefix>.report.<node>; node < 0 gives the rights of any node of the
// group (<Prefix>.report.*), for a key that is not in a keyring. Every
// server of adaptio, "adaptio nats" and the Council's embedded one, builds
// its permissions here.
func (g Group) Permissions(role Role, node int) *server.Permissions {
	p := g.Prefix
	bucket := g.Bucket
	if bucket == "" {
		bucket = CouncilBucket(p)
	}
	switch role {
	case RoleCouncil:
		kv := "$KV." + bucket + ".>"
		return &server.Permissions{
			Publish:   &server.SubjectPermission{Allow: []string{p + ".>", "$JS.API.>", "$JS.ACK.>", "$JS.FC.>", kv, inbox}},
			Subscribe: &server.SubjectPermission{Allow: []string{p + ".>", kv, inbox}},
		}
	case RoleNode:
		report := p + ".report.*"
		if node >= 0 {
			report = p + ".report." + strconv.Itoa(node)
		}
		return &server.Permissions{
			Publish:   &server.SubjectPermission{Allow: []string{report}},
			Subscribe: &server.SubjectPermission{Allow: []string{p + ".decision", inbox}},
		}
	case RoleOperator:
		return &server.Permissions{
			Publish:   &server.SubjectPermission{Allow: []string{p + ".admin", p + ".admin.>"}},
			Subscribe: &server.SubjectPermission{Allow: []string{inbox}},
		}
	case RoleObserver:
		return &server.Permissions{
			Publish:   &server.SubjectPermission{Deny: []string{">"}},
			Subscribe: &server.SubjectPermission{Allow: []string{p + ".decision", p + ".report.*", inbox}},
		}
	}
	// An unknown role may do nothing.
	return &server.Permissions{
		Publish:   &server.SubjectPermission{Deny: []string{">"}},
		Subscribe: &server.SubjectPermission{Deny: []string{">"}},
	}
}

// KeyRole returns the role of public key pub in ring and, for a node, its
// index; ok is false if ring does not hold the key.
func KeyRole(ring *keyring.Keyring, pub string) (role Role, node int, ok bool) {
	if ring == nil || pub == "" {
		return 0, -1, false
	}
	if pub == ring.Council {
		return RoleCouncil, -1, true
	}
	for k, n := range ring.Nodes {
		if n == pub {
			return RoleNode, k, true
		}
	}
	for _, o := range ring.Operators {
		if o == pub {
			return RoleOperator, -1, true
		}
	}
	for _, o := range ring.Observers {
		if o == pub {
			return RoleObserver, -1, true
		}
	}
	return 0, -1, false
}

// Users returns one NKey user per key of ring, each with its role's
// permissions in the group: the Council's key, node k's key (reports of
// node k only), the operators' and the observers' keys.
func (g Group) Users(ring *keyring.Keyring) []*server.NkeyUser {
	if ring == nil {
		return nil
	}
	users := []*server.NkeyUser{{Nkey: ring.Council, Permissions: g.Permissions(RoleCouncil, -1)}}
	for k, n := range ring.Nodes {
		users = append(users, &server.NkeyUser{Nkey: n, Permissions: g.Permissions(RoleNode, k)})
	}
	for _, o := range ring.Operators {
		users = append(users, &server.NkeyUser{Nkey: o, Permissions: g.Permissions(RoleOperator, -1)})
	}
	for _, o := range ring.Observers {
		users = append(users, &server.NkeyUser{Nkey: o, Permissions: g.Permissions(RoleObserver, -1)})
	}
	return users
}
