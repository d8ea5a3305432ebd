package sip

import (
	"fmt"
	"net/netip"
	"sync"

	"github.com/emiago/sipgo/sip"
)

// contactTable routes the INVITEs that arrive on the contacts the
// server's registrations bind: a registrar (a PBX, a carrier) forwards a
// call for the registered user to our Contact, whose user part is the
// registration's, not a phone number. It also names the registrars the
// server may open TCP or TLS connections to.
type contactTable struct {
	mu    sync.Mutex
	users map[string]*Registration
	peers map[*Registration]netip.Addr
}

// add routes r's contact user to r; ErrContactInUse when another
// registration has it.
func (t *contactTable) add(r *Registration) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.users == nil {
		t.users, t.peers = map[string]*Registration{}, map[*Registration]netip.Addr{}
	}
	user := r.b.contactUser()
	if other, ok := t.users[user]; ok && other != r {
		return fmt.Errorf("%w: %s", ErrContactInUse, user)
	}
	t.users[user] = r
	return nil
}

func (t *contactTable) remove(r *Registration) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.users[r.b.contactUser()] == r {
		delete(t.users, r.b.contactUser())
	}
	delete(t.peers, r)
}

// allowPeer lets the server connect to a, where r's requests go.
func (t *contactTable) allowPeer(r *Registration, a netip.Addr) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, ok := t.users[r.b.contactUser()]; ok {
		t.peers[r] = a.Unmap()
	}
}

// peer reports whether a registration sends its requests to a.
func (t *contactTable) peer(a netip.Addr) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, p := range t.peers {
		if p == a {
			return true
		}
	}
	return false
}

// number is the E.164 number an INVITE for contact user user goes to:
// the registration's number its To names, else its first; ok is false
// when no registration has the contact user.
func (t *contactTable) number(user string, to *sip.ToHeader, trunkPrefix, country string) (string, bool) {
	t.mu.Lock()
	r := t.users[user]
	t.mu.Unlock()
	if r == nil || len(r.b.Numbers) == 0 {
		return "", false
	}
	if to != nil && len(r.b.Numbers) > 1 {
		if e, err := NormalizeNumber(to.Address.User, trunkPrefix, country); err == nil {
			for _, n := range r.b.Numbers {
				if n == e {
					return n, true
				}
			}
		}
	}
	return r.b.Numbers[0], true
}

// calledNumber is the E.164 number an INVITE calls: the number of the
// registration whose contact it arrived on, else its Request-URI user
// (or To user) normalised (package documentation).
func (s *Server) calledNumber(req *sip.Request) (string, error) {
	user := req.Recipient.User
	if user == "" {
		user = req.To().Address.User
	}
	if e, ok := s.contacts.number(req.Recipient.User, req.To(), s.opts.TrunkPrefix, s.opts.DefaultCountry); ok {
		return e, nil
	}
	return NormalizeNumber(user, s.opts.TrunkPrefix, s.opts.DefaultCountry)
}
