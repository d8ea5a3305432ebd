// Package agent owns agent records: the voice agents that phone numbers
// route calls to. It serves POST/GET/PATCH/DELETE /v1/agents[/{agent_id}],
// validates every setting (voice, model, language, greeting, …) and keeps
// the settings as the store record's JSON document, so later settings need
// no migration. Load gives the per-call runtime an agent's typed Config.
//
// The per-call runtime (session config, greeting, tools, barge-in) comes in
// a later issue and builds on Config.
package agent
