package store

import (
	"context"
	"time"
)

// Registration states of a binding.
const (
	RegistrationOff         = "off"         // nobody registers it (not yet, or unregistered)
	RegistrationRegistering = "registering" // a REGISTER is under way
	RegistrationRegistered  = "registered"  // the registrar holds the binding
	RegistrationFailed      = "failed"      // the last REGISTER failed; retried with backoff
)

// NumberRegistration is a number's outbound registration: the account the
// appliance registers at a registrar so that the calls of a registration-only
// carrier or a PBX extension reach it.
type NumberRegistration struct {
	NumberID string
	// PhoneNumber and TeamID are the number's (read with it; never written
	// through Put).
	PhoneNumber string
	TeamID      string
	// Registrar is the registrar's SIP URI (the REGISTER's Request-URI and
	// the domain of the address of record).
	Registrar string
	// Transport is udp, tcp or tls.
	Transport string
	// OutboundProxy, when set, is where the REGISTERs are sent instead.
	OutboundProxy string
	// Username is the user of the address of record; AuthUsername answers
	// the digest challenge ("" for Username).
	Username     string
	AuthUsername string
	PasswordEnc  string // sealed with the master key; never plaintext
	// ExpiresS is the registration interval asked for, in seconds.
	ExpiresS int
	// ContactUser is the user part of the Contact registered: INVITEs
	// arriving with it in their Request-URI route to the number.
	ContactUser string
	// BindingKey names the binding these settings make; numbers that share
	// it share one registration.
	BindingKey string
	UpdateTime time.Time
}

// RegistrationBinding is the fleet's record of one binding: which node
// holds it until when, and its state as that node last wrote it.
type RegistrationBinding struct {
	Key string
	// NodeID holds the binding until LeaseUntil ("" when nobody does).
	NodeID     string
	LeaseUntil time.Time
	State      string
	// Expires is when the registrar's binding ends (zero unless
	// registered).
	Expires    time.Time
	LastStatus int
	LastError  string
	UpdateTime time.Time
}

// RegistrationStore keeps the numbers' registration settings and the
// fleet's bindings.
type RegistrationStore interface {
	// Get returns the registration of a number (ErrNotFound: none).
	Get(ctx context.Context, numberID string) (*NumberRegistration, error)
	// Put stores a number's registration, replacing its earlier one.
	Put(ctx context.Context, r *NumberRegistration) error
	// Delete removes a number's registration (ErrNotFound: none).
	Delete(ctx context.Context, numberID string) error
	// List returns every number's registration, the oldest numbers first.
	List(ctx context.Context) ([]*NumberRegistration, error)
	// ByContact returns the registrations whose contact user is user.
	ByContact(ctx context.Context, user string) ([]*NumberRegistration, error)

	// Binding returns the fleet's record of a binding (ErrNotFound: none).
	Binding(ctx context.Context, key string) (*RegistrationBinding, error)
	// Bindings returns every binding record, by key.
	Bindings(ctx context.Context) ([]*RegistrationBinding, error)
	// Claim makes node the holder of binding key until until when nobody
	// holds it, node does already, or the holder's lease ended before now
	// (a node renews its lease by claiming again); it reports whether node
	// holds it now.
	Claim(ctx context.Context, key, node string, until, now time.Time) (bool, error)
	// Release gives up node's hold of a binding (nothing when another node
	// holds it).
	Release(ctx context.Context, key, node string) error
	// SetState writes the state of a binding that b.NodeID holds
	// (ErrNotFound when it does not).
	SetState(ctx context.Context, b *RegistrationBinding) error
	// DeleteBinding forgets a binding's record.
	DeleteBinding(ctx context.Context, key string) error
}

// Registrations returns the registration store.
func (s *DB) Registrations() RegistrationStore { return sqlRegistrations{s.q} }

type sqlRegistrations struct{ q querier }

const registrationCols = `r.phone_number_id, n.phone_number, n.team_id, r.registrar, r.transport, r.outbound_proxy,
	r.username, r.auth_username, r.password_enc, r.expires_s, r.contact_user, r.binding_key, r.update_us`

const registrationFrom = ` FROM number_registrations r JOIN phone_numbers n ON n.id = r.phone_number_id`

func scanRegistration(row scanner) (*NumberRegistration, error) {
	var (
		r   NumberRegistration
		uUS int64
	)
	if err := row.Scan(&r.NumberID, &r.PhoneNumber, &r.TeamID, &r.Registrar, &r.Transport, &r.OutboundProxy,
		&r.Username, &r.AuthUsername, &r.PasswordEnc, &r.ExpiresS, &r.ContactUser, &r.BindingKey, &uUS); err != nil {
		return nil, err
	}
	r.UpdateTime = fromUS(uUS)
	return &r, nil
}

func (s sqlRegistrations) Get(ctx context.Context, numberID string) (*NumberRegistration, error) {
	r, err := scanRegistration(s.q.QueryRowContext(ctx, `SELECT `+registrationCols+registrationFrom+` WHERE r.phone_number_id = ?`, numberID))
	return r, mapErr("get registration", err)
}

func (s sqlRegistrations) Put(ctx context.Context, r *NumberRegistration) error {
	_, err := s.q.ExecContext(ctx, `INSERT INTO number_registrations(phone_number_id, registrar, transport, outbound_proxy,
		username, auth_username, password_enc, expires_s, contact_user, binding_key, update_us) VALUES (?,?,?,?,?,?,?,?,?,?,?)
		ON CONFLICT (phone_number_id) DO UPDATE SET registrar = excluded.registrar, transport = excluded.transport,
		outbound_proxy = excluded.outbound_proxy, username = excluded.username, auth_username = excluded.auth_username,
		password_enc = excluded.password_enc, expires_s = excluded.expires_s, contact_user = excluded.contact_user,
		binding_key = excluded.binding_key, update_us = excluded.update_us`,
		r.NumberID, r.Registrar, r.Transport, r.OutboundProxy, r.Username, r.AuthUsername, r.PasswordEnc, r.ExpiresS,
		r.ContactUser, r.BindingKey, toUS(r.UpdateTime))
	return mapErr("put registration", err)
}

func (s sqlRegistrations) Delete(ctx context.Context, numberID string) error {
	res, err := s.q.ExecContext(ctx, `DELETE FROM number_registrations WHERE phone_number_id = ?`, numberID)
	return affected("delete registration", res, err)
}

func (s sqlRegistrations) List(ctx context.Context) ([]*NumberRegistration, error) {
	return s.list(ctx, "list registrations", ` ORDER BY n.create_us, n.id`)
}

func (s sqlRegistrations) ByContact(ctx context.Context, user string) ([]*NumberRegistration, error) {
	return s.list(ctx, "find registrations", ` WHERE r.contact_user = ? ORDER BY n.create_us, n.id`, user)
}

func (s sqlRegistrations) list(ctx context.Context, op, tail string, args ...any) ([]*NumberRegistration, error) {
	rows, err := s.q.QueryContext(ctx, `SELECT `+registrationCols+registrationFrom+tail, args...)
	if err != nil {
		return nil, mapErr(op, err)
	}
	defer rows.Close()
	var out []*NumberRegistration
	for rows.Next() {
		r, err := scanRegistration(rows)
		if err != nil {
			return nil, mapErr(op, err)
		}
		out = append(out, r)
	}
	return out, mapErr(op, rows.Err())
}

const bindingCols = `binding_key, node_id, lease_us, state, expires_us, last_status, last_error, update_us`

func scanBinding(row scanner) (*RegistrationBinding, error) {
	var (
		b             RegistrationBinding
		lUS, eUS, uUS int64
	)
	if err := row.Scan(&b.Key, &b.NodeID, &lUS, &b.State, &eUS, &b.LastStatus, &b.LastError, &uUS); err != nil {
		return nil, err
	}
	b.LeaseUntil, b.UpdateTime = fromUS(lUS), fromUS(uUS)
	if eUS != 0 {
		b.Expires = fromUS(eUS)
	}
	return &b, nil
}

func (s sqlRegistrations) Binding(ctx context.Context, key string) (*RegistrationBinding, error) {
	b, err := scanBinding(s.q.QueryRowContext(ctx, `SELECT `+bindingCols+` FROM registration_bindings WHERE binding_key = ?`, key))
	return b, mapErr("get binding", err)
}

func (s sqlRegistrations) Bindings(ctx context.Context) ([]*RegistrationBinding, error) {
	rows, err := s.q.QueryContext(ctx, `SELECT `+bindingCols+` FROM registration_bindings ORDER BY binding_key`)
	if err != nil {
		return nil, mapErr("list bindings", err)
	}
	defer rows.Close()
	var out []*RegistrationBinding
	for rows.Next() {
		b, err := scanBinding(rows)
		if err != nil {
			return nil, mapErr("list bindings", err)
		}
		out = append(out, b)
	}
	return out, mapErr("list bindings", rows.Err())
}

func (s sqlRegistrations) Claim(ctx context.Context, key, node string, until, now time.Time) (bool, error) {
	if _, err := s.q.ExecContext(ctx, `INSERT INTO registration_bindings(binding_key, update_us) VALUES (?, ?)
		ON CONFLICT (binding_key) DO NOTHING`, key, toUS(now)); err != nil {
		return false, mapErr("claim binding", err)
	}
	res, err := s.q.ExecContext(ctx, `UPDATE registration_bindings SET node_id = ?, lease_us = ?
		WHERE binding_key = ? AND (node_id = ? OR node_id = '' OR lease_us < ?)`, node, toUS(until), key, node, toUS(now))
	if err != nil {
		return false, mapErr("claim binding", err)
	}
	n, err := res.RowsAffected()
	return n == 1, mapErr("claim binding", err)
}

func (s sqlRegistrations) Release(ctx context.Context, key, node string) error {
	_, err := s.q.ExecContext(ctx, `UPDATE registration_bindings SET node_id = '', lease_us = 0 WHERE binding_key = ? AND node_id = ?`, key, node)
	return mapErr("release binding", err)
}

func (s sqlRegistrations) SetState(ctx context.Context, b *RegistrationBinding) error {
	res, err := s.q.ExecContext(ctx, `UPDATE registration_bindings SET state = ?, expires_us = ?, last_status = ?, last_error = ?,
		update_us = ? WHERE binding_key = ? AND node_id = ?`,
		b.State, optUS0(b.Expires), b.LastStatus, b.LastError, toUS(b.UpdateTime), b.Key, b.NodeID)
	return affected("set binding state", res, err)
}

func (s sqlRegistrations) DeleteBinding(ctx context.Context, key string) error {
	_, err := s.q.ExecContext(ctx, `DELETE FROM registration_bindings WHERE binding_key = ?`, key)
	return mapErr("delete binding", err)
}

// optUS0 is t in microseconds, 0 for the zero time.
func optUS0(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return toUS(t)
}
