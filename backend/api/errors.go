package api

import (
	"errors"
	"net/http"
	"strconv"

	"github.com/adlink/adlink/contract"
	"github.com/adlink/adlink/match"
)

// The error codes of the JSON error body: contract's, which the page's
// module answers with too.
const (
	CodeMissingParameter = contract.CodeMissingParameter
	CodeInvalidParameter = contract.CodeInvalidParameter
	CodeUnknownAPIKey    = contract.CodeUnknownAPIKey
	CodeForeignSite      = contract.CodeForeignSite
	CodeForeignURL       = contract.CodeForeignURL
	CodeNotFound         = contract.CodeNotFound
	CodeMethodNotAllowed = contract.CodeMethodNotAllowed
	CodeURITooLong       = contract.CodeURITooLong
	CodeHeadersTooLarge  = contract.CodeHeadersTooLarge
	CodeRateLimited      = contract.CodeRateLimited
	CodeQueueFull        = contract.CodeQueueFull
	CodeNotReady         = contract.CodeNotReady
	CodeInternal         = contract.CodeInternal
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
	// Limit names the rate limit's bucket that refused the request (a
	// 429), so that a client need not read it from the message.
	Limit string
	// RetryAfter is the whole seconds the client is asked to wait before
	// it asks again, 0 for none: the Retry-After header and the body's
	// retry_after both carry it.
	RetryAfter int64
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
	return problemError(http.StatusInternalServerError, contract.Internal(), err)
}

// asError turns any handler error into an *Error; an untyped one is a 500.
func asError(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	return internal(err)
}

// body is the error body, as the page's module writes it too.
func (e *Error) body() []byte { return e.bodyWithID("") }

// bodyWithID is the error body with the request id, which a client quotes
// when it reports a 5xx, and with the server's fields the module never
// writes (limit, retry_after), added here so that they cost the module
// nothing.
func (e *Error) bodyWithID(id string) []byte {
	b := contract.AppendError(nil, contract.Problem{Code: e.Code, Param: e.Param, Message: e.Message}, id)
	if e.Limit == "" && e.RetryAfter <= 0 {
		return b
	}
	b = b[:len(b)-len("}}")] // reopen the error object AppendError closed
	if e.Limit != "" {
		b = append(b, `,"limit":`...)
		b = match.AppendJSONString(b, e.Limit)
	}
	if e.RetryAfter > 0 {
		b = append(b, `,"retry_after":`...)
		b = strconv.AppendInt(b, e.RetryAfter, 10)
	}
	return append(b, "}}"...)
}

// setRetryAfter sets the Retry-After header of an error that asks the
// client to wait, from the field its body's retry_after holds, so the two
// always agree.
func (e *Error) setRetryAfter(h http.Header) {
	if e.RetryAfter > 0 {
		h.Set("Retry-After", strconv.FormatInt(e.RetryAfter, 10))
	}
}

// quote shows a client's value in a message, cut to a readable length.
func quote(s string) string { return match.Quote(s) }
