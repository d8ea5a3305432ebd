package store

import (
	"context"
	"database/sql"
)

type sqlKeys struct {
	q  querier
	db *DB
}

const keyCols = `id, team_id, user_id, name, key_hash, redacted, old_key_hash, old_expire_us, acls,
	qps, qpm, tpm, disabled, expire_us, management, modified_by, create_us, modify_us`

func scanKey(row scanner) (*APIKey, error) {
	var (
		k              APIKey
		oldHash        sql.NullString
		oldExp, exp    *int64
		acls           string
		cUS, mUS       int64
		disabled, mgmt bool
	)
	if err := row.Scan(&k.ID, &k.TeamID, &k.UserID, &k.Name, &k.Hash, &k.Redacted, &oldHash, &oldExp, &acls,
		&k.QPS, &k.QPM, &k.TPM, &disabled, &exp, &mgmt, &k.ModifiedBy, &cUS, &mUS); err != nil {
		return nil, err
	}
	var err error
	if k.ACLs, err = parseList(acls); err != nil {
		return nil, err
	}
	k.OldHash = oldHash.String
	k.OldExpire = fromOptUS(oldExp)
	k.ExpireTime = fromOptUS(exp)
	k.Disabled, k.Management = disabled, mgmt
	k.CreateTime, k.ModifyTime = fromUS(cUS), fromUS(mUS)
	return &k, nil
}

func nullStr(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func (s sqlKeys) Create(ctx context.Context, k *APIKey) error {
	_, err := s.q.ExecContext(ctx, `INSERT INTO api_keys(`+keyCols+`) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)`,
		k.ID, k.TeamID, k.UserID, k.Name, k.Hash, k.Redacted, nullStr(k.OldHash), optUS(k.OldExpire), jsonList(k.ACLs),
		k.QPS, k.QPM, k.TPM, k.Disabled, optUS(k.ExpireTime), k.Management, k.ModifiedBy, toUS(k.CreateTime), toUS(k.ModifyTime))
	return mapErr("create api key", err)
}

func (s sqlKeys) Get(ctx context.Context, id string) (*APIKey, error) {
	k, err := scanKey(s.q.QueryRowContext(ctx, `SELECT `+keyCols+` FROM api_keys WHERE id = ?`, id))
	return k, mapErr("get api key", err)
}

func (s sqlKeys) ByHash(ctx context.Context, hash string) (*APIKey, error) {
	k, err := scanKey(s.q.QueryRowContext(ctx, `SELECT `+keyCols+` FROM api_keys WHERE key_hash = ? OR old_key_hash = ?`, hash, hash))
	return k, mapErr("find api key", err)
}

func (s sqlKeys) List(ctx context.Context, teamID string, q KeyQuery) ([]*APIKey, string, error) {
	where, args := `team_id = ?`, []any{teamID}
	if q.ActiveOnly {
		where += ` AND disabled = 0 AND (expire_us IS NULL OR expire_us > ?)`
		args = append(args, toUS(q.Now))
	}
	if q.UserID != "" {
		where += ` AND user_id = ?`
		args = append(args, q.UserID)
	}
	if len(q.ACLFilters) > 0 {
		// acls is the JSON list jsonList wrote; a key holds an ACL when
		// the list contains that string JSON-encoded the same way.
		for _, acl := range q.ACLFilters {
			where += ` AND ` + s.db.contains("acls")
			args = append(args, jsonString(acl))
		}
	}
	where, args, err := pageArgs(where, args, q.Page, "create_us")
	if err != nil {
		return nil, "", err
	}
	return listPage(ctx, s.q, "list api keys", `SELECT `+keyCols+` FROM api_keys WHERE `+where+` ORDER BY create_us, id`,
		args, q.Page.limit(), scanKey, func(k *APIKey) cursor { return cursor{US: toUS(k.CreateTime), ID: k.ID} })
}

func (s sqlKeys) Update(ctx context.Context, k *APIKey) error {
	res, err := s.q.ExecContext(ctx, `UPDATE api_keys SET name=?, key_hash=?, redacted=?, old_key_hash=?, old_expire_us=?,
		acls=?, qps=?, qpm=?, tpm=?, disabled=?, expire_us=?, management=?, modified_by=?, modify_us=? WHERE id=?`,
		k.Name, k.Hash, k.Redacted, nullStr(k.OldHash), optUS(k.OldExpire), jsonList(k.ACLs), k.QPS, k.QPM, k.TPM,
		k.Disabled, optUS(k.ExpireTime), k.Management, k.ModifiedBy, toUS(k.ModifyTime), k.ID)
	return affected("update api key", res, err)
}

func (s sqlKeys) Delete(ctx context.Context, id string) error {
	res, err := s.q.ExecContext(ctx, `DELETE FROM api_keys WHERE id = ?`, id)
	return affected("delete api key", res, err)
}

func (s sqlKeys) Count(ctx context.Context) (int, error) {
	var n int
	err := s.q.QueryRowContext(ctx, `SELECT COUNT(*) FROM api_keys`).Scan(&n)
	return n, mapErr("count api keys", err)
}
