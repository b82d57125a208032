package web

import "strconv"

// ToolPickerView is the tool picker under an llm agent's Tools field: the
// search typed and, once searched, what the hub found. The Tools textarea
// stays the source of truth; the picker only adds lines to it.
type ToolPickerView struct {
	Q        string
	Searched bool // a search ran: show its results, or say none matched
	Results  []ToolResult
	Error    string // the search could not run; says what to do
}

// ToolResult is one listing the picker offers as a tool.
type ToolResult struct {
	ID          string
	Name        string
	DisplayName string
	Host        HostView
	// Kind is what the listing is to people: "MCP server" or "agent".
	Kind string
	// Status and State are its liveness and health, said in one word as
	// on the cards; Askable is false when it would not answer now.
	Status  string
	State   string
	Askable bool
	// OffersLabel names Offers: "Tools", "Skills" or "About".
	OffersLabel string
	Offers      string // what it offers; the page cuts it short
	// Added: its id is a line of the Tools field already.
	Added bool
}

// toolResultsSummary is the first line of the picker's results, read out
// by the live region.
func toolResultsSummary(v ToolPickerView) string {
	switch n := len(v.Results); n {
	case 0:
		return "No agent on the hub matches “" + v.Q + "”: try another word, or type a server's URL in Tools."
	case 1:
		return "1 agent found:"
	default:
		return strconv.Itoa(n) + " agents found:"
	}
}

// toolAddLabel is an Add button's accessible name ("Add Weather Bot"),
// its visible text first.
func toolAddLabel(r ToolResult) string { return "Add " + r.DisplayName }
