// Server events of MCP tool listings and MCP calls.

package realtime

// MCPListToolsInProgress (mcp_list_tools.in_progress, server event) reports an MCP tool listing under way.
type MCPListToolsInProgress struct {
	Header
	// ItemID is the item the event is about.
	ItemID string `json:"item_id"`
}

// EventType returns TypeMCPListToolsInProgress.
func (*MCPListToolsInProgress) EventType() string { return TypeMCPListToolsInProgress }

// MCPListToolsCompleted (mcp_list_tools.completed, server event) reports an MCP tool listing done.
type MCPListToolsCompleted struct {
	Header
	// ItemID is the item the event is about.
	ItemID string `json:"item_id"`
}

// EventType returns TypeMCPListToolsCompleted.
func (*MCPListToolsCompleted) EventType() string { return TypeMCPListToolsCompleted }

// MCPListToolsFailed (mcp_list_tools.failed, server event) reports an MCP tool listing failed.
type MCPListToolsFailed struct {
	Header
	// ItemID is the item the event is about.
	ItemID string `json:"item_id"`
}

// EventType returns TypeMCPListToolsFailed.
func (*MCPListToolsFailed) EventType() string { return TypeMCPListToolsFailed }

// ResponseMCPCallArgumentsDelta (response.mcp_call_arguments.delta, server event) carries part of an MCP call's arguments.
type ResponseMCPCallArgumentsDelta struct {
	Header
	// ResponseID is the response the event belongs to.
	ResponseID string `json:"response_id"`
	// ItemID is the item the event is about.
	ItemID string `json:"item_id"`
	// OutputIndex is the index of the output item in the response.
	OutputIndex int `json:"output_index"`
	// Delta is the arguments delta.
	Delta string `json:"delta"`
	// Obfuscation is padding some providers add.
	Obfuscation string `json:"obfuscation,omitempty"`
}

// EventType returns TypeResponseMCPCallArgumentsDelta.
func (*ResponseMCPCallArgumentsDelta) EventType() string { return TypeResponseMCPCallArgumentsDelta }

// ResponseMCPCallArgumentsDone (response.mcp_call_arguments.done, server event) carries an MCP call's final arguments.
type ResponseMCPCallArgumentsDone struct {
	Header
	// ResponseID is the response the event belongs to.
	ResponseID string `json:"response_id"`
	// ItemID is the item the event is about.
	ItemID string `json:"item_id"`
	// OutputIndex is the index of the output item in the response.
	OutputIndex int `json:"output_index"`
	// Arguments is the JSON-encoded arguments.
	Arguments string `json:"arguments"`
}

// EventType returns TypeResponseMCPCallArgumentsDone.
func (*ResponseMCPCallArgumentsDone) EventType() string { return TypeResponseMCPCallArgumentsDone }

// ResponseMCPCallInProgress (response.mcp_call.in_progress, server event) reports an MCP call under way.
type ResponseMCPCallInProgress struct {
	Header
	// OutputIndex is the index of the output item in the response.
	OutputIndex int `json:"output_index"`
	// ItemID is the item the event is about.
	ItemID string `json:"item_id"`
}

// EventType returns TypeResponseMCPCallInProgress.
func (*ResponseMCPCallInProgress) EventType() string { return TypeResponseMCPCallInProgress }

// ResponseMCPCallCompleted (response.mcp_call.completed, server event) reports an MCP call done.
type ResponseMCPCallCompleted struct {
	Header
	// OutputIndex is the index of the output item in the response.
	OutputIndex int `json:"output_index"`
	// ItemID is the item the event is about.
	ItemID string `json:"item_id"`
}

// EventType returns TypeResponseMCPCallCompleted.
func (*ResponseMCPCallCompleted) EventType() string { return TypeResponseMCPCallCompleted }

// ResponseMCPCallFailed (response.mcp_call.failed, server event) reports an MCP call failed.
type ResponseMCPCallFailed struct {
	Header
	// OutputIndex is the index of the output item in the response.
	OutputIndex int `json:"output_index"`
	// ItemID is the item the event is about.
	ItemID string `json:"item_id"`
}

// EventType returns TypeResponseMCPCallFailed.
func (*ResponseMCPCallFailed) EventType() string { return TypeResponseMCPCallFailed }
