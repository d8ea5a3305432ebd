package store

import (
	"context"
	"encoding/json"
	"time"
)

// ClientSecret is an ephemeral realtime client secret. Only the hash of
// its value is kept.
type ClientSecret struct {
	ID     string
	TeamID string
	// KeyID is the API key that created the secret.
	KeyID string
	Hash  string
	// Session is the realtime session configuration (JSON) applied when
	// the secret opens a session; empty: none.
	Session    json.RawMessage
	ExpireTime time.Time
	CreateTime time.Time
}

// ClientSecretStore keeps client secrets.
type ClientSecretStore interface {
	Create(ctx context.Context, s *ClientSecret) error
	// ByHash finds a secret by the hash of its value (expired or not).
	ByHash(ctx context.Context, hash string) (*ClientSecret, error)
	// DeleteExpired removes the secrets that expired before t and
	// reports how many.
	DeleteExpired(ctx context.Context, t time.Time) (int, error)
}

type sqlClientSecrets struct{ q querier }

const clientSecretCols = `id, team_id, key_id, secret_hash, session, expire_us, create_us`

func (s sqlClientSecrets) Create(ctx context.Context, cs *ClientSecret) error {
	_, err := s.q.ExecContext(ctx, `INSERT INTO client_secrets(`+clientSecretCols+`) VALUES (?,?,?,?,?,?,?)`,
		cs.ID, cs.TeamID, cs.KeyID, cs.Hash, string(cs.Session), toUS(cs.ExpireTime), toUS(cs.CreateTime))
	return mapErr("create client secret", err)
}

func (s sqlClientSecrets) ByHash(ctx context.Context, hash string) (*ClientSecret, error) {
	var (
		cs       ClientSecret
		session  string
		eUS, cUS int64
	)
	err := s.q.QueryRowContext(ctx, `SELECT `+clientSecretCols+` FROM client_secrets WHERE secret_hash = ?`, hash).
		Scan(&cs.ID, &cs.TeamID, &cs.KeyID, &cs.Hash, &session, &eUS, &cUS)
	if err != nil {
		return nil, mapErr("find client secret", err)
	}
	if session != "" {
		cs.Session = json.RawMessage(session)
	}
	cs.ExpireTime, cs.CreateTime = fromUS(eUS), fromUS(cUS)
	return &cs, nil
}

func (s sqlClientSecrets) DeleteExpired(ctx context.Context, t time.Time) (int, error) {
	res, err := s.q.ExecContext(ctx, `DELETE FROM client_secrets WHERE expire_us < ?`, toUS(t))
	if err != nil {
		return 0, mapErr("delete expired client secrets", err)
	}
	n, err := res.RowsAffected()
	return int(n), mapErr("delete expired client secrets", err)
}
