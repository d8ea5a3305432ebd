// Package agent owns agent records: the voice agents that phone numbers
// route calls to. It serves POST/GET/PATCH/DELETE /v1/agents[/{agent_id}],
// validates every setting (voice, model, language, greeting, …) and keeps
// the settings as the store record's JSON document, so later settings need
// no migration. Load gives the per-call runtime (package conversation) an
// agent's typed Config.
//
// API choices: POST and PATCH answer 200 with the agent, DELETE answers {}
// and is refused with 409 (param agent_id) while a number routes to the
// agent. On PATCH an absent or null field is left as it is and an empty
// instructions, language or greeting clears it. voice is case-insensitive
// and stored lower-case; naming a model needs the key's model ACL (403).
// language is a 2-3 letter language with optional script and region, in
// canonical case (en-us → en-US), or "auto".
package agent
