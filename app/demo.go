package app

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"switchboard/agent"
	"switchboard/api/httpx"
	"switchboard/store"
)

// DemoAgentName names the agent seeded with the demo number.
const DemoAgentName = "Demo agent"

// seedDemo creates, on a store without any phone number, the demo agent and
// the demo number routed to it, so a newcomer can call the appliance right
// away. It reports the number it created ("" when it did nothing).
func (a *App) seedDemo(ctx context.Context, number, sipHost string) (string, error) {
	if number == "" {
		return "", nil
	}
	nums, _, err := a.st.Numbers().List(ctx, a.cfg.TeamID, store.Page{Size: 1})
	if err != nil || len(nums) > 0 {
		return "", err
	}
	now := time.Now().UTC()
	doc, err := json.Marshal(agent.Settings{
		Instructions: "You are the Switchboard demo agent. Greet the caller and repeat what they say.",
		Voice:        agent.DefaultVoice, Model: agent.DefaultModel, Language: "en",
		Greeting: "Hello, this is the Switchboard demo. Say something and I will repeat it.",
	})
	if err != nil {
		return "", err
	}
	ag := &store.Agent{ID: httpx.NewID("ag"), TeamID: a.cfg.TeamID, Name: DemoAgentName, Doc: doc, CreateTime: now, UpdateTime: now}
	pn := &store.PhoneNumber{ID: httpx.NewID("pn"), TeamID: a.cfg.TeamID, PhoneNumber: number, Name: "Demo number",
		Origin: "byo_trunk", AgentID: ag.ID, InboundTrunkID: httpx.NewID("tr"), CreateTime: now, UpdateTime: now}
	err = a.st.Tx(ctx, func(tx store.Store) error {
		if err := tx.Agents().Create(ctx, ag); err != nil {
			return err
		}
		if err := tx.Numbers().Create(ctx, pn, nil); err != nil {
			return err
		}
		return tx.Audit().Append(ctx, &store.AuditEvent{ID: httpx.NewID("ev"), TeamID: a.cfg.TeamID, UserID: "system",
			Action: "phone_number.seed", Resource: "phone_number/" + pn.ID, Description: "demo number " + number + " routed to the demo agent", Time: now})
	})
	if errors.Is(err, store.ErrConflict) {
		return "", nil // another node of the fleet seeded it at the same time
	}
	if err != nil {
		return "", err
	}
	return number, nil
}
