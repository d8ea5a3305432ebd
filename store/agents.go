package store

import "context"

type sqlAgents struct {
	q  querier
	db *DB
}

const agentCols = `id, team_id, name, doc, create_us, update_us`

func scanAgent(row scanner) (*Agent, error) {
	var (
		a        Agent
		doc      string
		cUS, uUS int64
	)
	if err := row.Scan(&a.ID, &a.TeamID, &a.Name, &doc, &cUS, &uUS); err != nil {
		return nil, err
	}
	a.Doc = []byte(doc)
	a.CreateTime, a.UpdateTime = fromUS(cUS), fromUS(uUS)
	return &a, nil
}

func (s sqlAgents) Create(ctx context.Context, a *Agent) error {
	_, err := s.q.ExecContext(ctx, `INSERT INTO agents(`+agentCols+`) VALUES (?,?,?,?,?,?)`,
		a.ID, a.TeamID, a.Name, string(a.Doc), toUS(a.CreateTime), toUS(a.UpdateTime))
	return mapErr("create agent", err)
}

// getAgentSQL reads one agent: once per call routed to an agent, so it
// is prepared once.
const getAgentSQL = `SELECT ` + agentCols + ` FROM agents WHERE id = ?`

func (s sqlAgents) Get(ctx context.Context, id string) (*Agent, error) {
	a, err := scanAgent(s.db.queryRowPrepared(ctx, getAgentSQL, id))
	return a, mapErr("get agent", err)
}

func (s sqlAgents) List(ctx context.Context, teamID string, p Page) ([]*Agent, string, error) {
	where, args, err := pageArgs(`team_id = ?`, []any{teamID}, p, "create_us")
	if err != nil {
		return nil, "", err
	}
	return listPage(ctx, s.q, "list agents", `SELECT `+agentCols+` FROM agents WHERE `+where+` ORDER BY create_us, id`,
		args, p.limit(), scanAgent, func(a *Agent) cursor { return cursor{US: toUS(a.CreateTime), ID: a.ID} })
}

func (s sqlAgents) Update(ctx context.Context, a *Agent) error {
	res, err := s.q.ExecContext(ctx, `UPDATE agents SET name=?, doc=?, update_us=? WHERE id=?`,
		a.Name, string(a.Doc), toUS(a.UpdateTime), a.ID)
	return affected("update agent", res, err)
}

func (s sqlAgents) Delete(ctx context.Context, id string) error {
	res, err := s.q.ExecContext(ctx, `DELETE FROM agents WHERE id = ?`, id)
	return affected("delete agent", res, err)
}

func (s sqlAgents) Each(ctx context.Context, fn func(*Agent) error) error {
	p := Page{Size: MaxPageSize}
	for {
		where, args, err := pageArgs(`1 = 1`, nil, p, "create_us")
		if err != nil {
			return err
		}
		page, next, err := listPage(ctx, s.q, "list agents", `SELECT `+agentCols+` FROM agents WHERE `+where+` ORDER BY create_us, id`,
			args, p.limit(), scanAgent, func(a *Agent) cursor { return cursor{US: toUS(a.CreateTime), ID: a.ID} })
		if err != nil {
			return err
		}
		for _, a := range page {
			if err := fn(a); err != nil {
				return err
			}
		}
		if next == "" {
			return nil
		}
		p.Token = next
	}
}
