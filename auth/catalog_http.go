package auth

import (
	"net/http"

	"switchboard/api/httpx"
	"switchboard/realtime"
)

// languageModel is one entry of languageModels in GET
// /auth/teams/{teamId}/models (document 002's field names). The appliance
// bills nothing and applies no per-model rate: prices and rates are "0"
// ("0 means no limit applied").
type languageModel struct {
	Name                              string         `json:"name"`
	Version                           string         `json:"version"`
	InputModalities                   []string       `json:"inputModalities"`
	OutputModalities                  []string       `json:"outputModalities"`
	PromptTextTokenPrice              string         `json:"promptTextTokenPrice"`
	PromptImageTokenPrice             string         `json:"promptImageTokenPrice"`
	PromptTextTokenPriceLongContext   string         `json:"promptTextTokenPriceLongContext"`
	CachedPromptTokenPrice            string         `json:"cachedPromptTokenPrice"`
	CachedPromptTokenPriceLongContext string         `json:"cachedPromptTokenPriceLongContext"`
	CompletionTextTokenPrice          string         `json:"completionTextTokenPrice"`
	CompletionTokenPriceLongContext   string         `json:"completionTokenPriceLongContext"`
	SearchPrice                       string         `json:"searchPrice"`
	RPS                               string         `json:"rps"`
	RPM                               string         `json:"rpm"`
	TPM                               string         `json:"tpm"`
	RPH                               string         `json:"rph"`
	RPD                               string         `json:"rpd"`
	Cluster                           string         `json:"cluster"`
	MaxPromptLength                   int            `json:"maxPromptLength"`
	Aliases                           []string       `json:"aliases"`
	Features                          map[string]any `json:"features"`
	Algorithm                         string         `json:"algorithm"`
	LongContextThreshold              string         `json:"longContextThreshold"`
}

// models is GET /auth/teams/{teamId}/models: the realtime models this
// appliance serves, as one cluster (this node).
func (s *KeyService) models(w http.ResponseWriter, r *http.Request) error {
	if _, err := team(r); err != nil {
		return err
	}
	var lms []languageModel
	for _, m := range realtime.Models() {
		lm := languageModel{Name: m.Name, Version: "1.0", InputModalities: []string{"TEXT", "AUDIO"}, OutputModalities: []string{"TEXT", "AUDIO"},
			Cluster: s.node, Aliases: []string{}, Algorithm: "realtime",
			Features: map[string]any{"functionCalling": true, "structuredOutputs": false, "reasoning": m.Reasoning}}
		for _, p := range []*string{&lm.PromptTextTokenPrice, &lm.PromptImageTokenPrice, &lm.PromptTextTokenPriceLongContext, &lm.CachedPromptTokenPrice,
			&lm.CachedPromptTokenPriceLongContext, &lm.CompletionTextTokenPrice, &lm.CompletionTokenPriceLongContext, &lm.SearchPrice,
			&lm.RPS, &lm.RPM, &lm.TPM, &lm.RPH, &lm.RPD, &lm.LongContextThreshold} {
			*p = "0"
		}
		if m.Name == realtime.DefaultModel {
			lm.Aliases = []string{"default"}
		}
		lms = append(lms, lm)
	}
	httpx.WriteJSON(w, http.StatusOK, map[string]any{"clusterConfigs": []any{map[string]any{"cluster": s.node, "languageModels": lms}}})
	return nil
}

// endpoints is GET /auth/teams/{teamId}/endpoints: the endpoint names an
// ACL can grant (the spec names the path as their source; its shape is
// the appliance's: {"endpoints":[{"name","description","management"}]}).
func (s *KeyService) endpoints(w http.ResponseWriter, r *http.Request) error {
	if _, err := team(r); err != nil {
		return err
	}
	type ep struct {
		Name        string `json:"name"`
		Description string `json:"description"`
		Management  bool   `json:"management"`
	}
	var out []ep
	for _, e := range Endpoints() {
		out = append(out, ep{e.Name, e.Description, e.Management})
	}
	httpx.WriteJSON(w, http.StatusOK, map[string]any{"endpoints": out})
	return nil
}
