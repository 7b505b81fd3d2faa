package api

import (
	"errors"
	"net/http"

	"github.com/adlink/adlink/match"
	"github.com/goccy/go-json"
)

// The error codes of the JSON error body. A client can branch on them; the
// message is for people.
const (
	CodeMissingParameter = match.ProblemMissing
	CodeInvalidParameter = match.ProblemInvalid
	CodeUnknownAPIKey    = "unknown_api_key"
	CodeForeignSite      = "site_not_allowed"
	CodeNotFound         = "not_found"
	CodeInternal         = "internal_error"
)

// Error is a failed request as the client sees it: the status, a code, a
// message safe to show, the parameter at fault, and the cause, which only
// the log sees. Handlers return it; one adapter writes it.
type Error struct {
	Status  int
	Code    string
	Message string
	// Param names the (first) parameter at fault, if any.
	Param string
	// Err is the underlying cause, logged for 5xx and never sent.
	Err error
}

// Error returns the message and, for the log, the cause.
func (e *Error) Error() string {
	if e.Err != nil {
		return e.Message + ": " + e.Err.Error()
	}
	return e.Message
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// internal wraps err as a 500 whose message tells the client nothing of it.
func internal(err error) *Error {
	return &Error{Status: http.StatusInternalServerError, Code: CodeInternal, Message: "internal error", Err: err}
}

// asError turns any handler error into an *Error; an untyped one is a 500.
func asError(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	return internal(err)
}

// errorBody is the DESIGN.md error shape.
type errorBody struct {
	Error errorDetail `json:"error"`
}

type errorDetail struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	Param   string `json:"param,omitempty"`
}

func (e *Error) body() []byte {
	b, err := json.Marshal(errorBody{Error: errorDetail{Code: e.Code, Message: e.Message, Param: e.Param}})
	if err != nil {
		// Marshalling three strings does not fail; keep a valid body anyway.
		return []byte(`{"error":{"code":"internal_error","message":"internal error"}}`)
	}
	return b
}

// bodyWithID is the error body with the request id, which a client quotes
// when it reports a 5xx.
func (e *Error) bodyWithID(id string) []byte {
	type detail struct {
		errorDetail
		RequestID string `json:"request_id"`
	}
	b, err := json.Marshal(struct {
		Error detail `json:"error"`
	}{detail{errorDetail{Code: e.Code, Message: e.Message, Param: e.Param}, id}})
	if err != nil {
		return e.body()
	}
	return b
}

// quote shows a client's value in a message, cut to a readable length.
func quote(s string) string { return match.Quote(s) }
