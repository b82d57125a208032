package httpkit

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/agentsite/agentsite/handlers/apiwire"
)

// ErrorBody is the JSON of every API error:
// {"error": {"code": "...", "message": "...", "fields": {...}}}; the shape
// is apiwire's, which the API's clients decode.
type ErrorBody = apiwire.ErrorBody

// ErrorJSON is the inside of ErrorBody.
type ErrorJSON = apiwire.Error

// CodeBadJSON is the code of a request body that is not the JSON a route
// takes.
const CodeBadJSON = "bad_json"

// WriteJSONError writes e as the API's JSON error, with its Retry-After.
func WriteJSONError(w http.ResponseWriter, e *Error) {
	SetRetryAfter(w, e)
	WriteJSON(w, e.Status, ErrorBody{Error: ErrorJSON{Code: e.Code, Message: e.Message, Fields: e.Fields}})
}

// WriteJSON writes v as an uncacheable JSON response.
func WriteJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(true)
	_ = enc.Encode(v)
}

// WriteJSONBody writes body, JSON already encoded (a memoized search
// page), as an uncacheable 200 response with its length.
func WriteJSONBody(w http.ResponseWriter, body []byte) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(body)
}

// DecodeJSON reads a JSON body strictly: one object, known fields only.
func DecodeJSON(r *http.Request, v any) error {
	ct := r.Header.Get("Content-Type")
	if ct != "" && !strings.HasPrefix(ct, "application/json") {
		return Errorf(http.StatusUnsupportedMediaType, "unsupported_media_type", "Send the body as application/json.")
	}
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var mbe *http.MaxBytesError
		var known *Error // a body that arrived too slowly
		if errors.As(err, &mbe) || errors.As(err, &known) {
			return err
		}
		if errors.Is(err, io.EOF) {
			return Errorf(http.StatusBadRequest, CodeBadJSON, "The request body is empty; send a JSON object.")
		}
		return Errorf(http.StatusBadRequest, CodeBadJSON, "The request body is not valid JSON for this route: "+jsonErrorText(err))
	}
	if dec.More() {
		return Errorf(http.StatusBadRequest, CodeBadJSON, "Send exactly one JSON object.")
	}
	return nil
}

// jsonErrorText describes a decoding error without echoing the body.
func jsonErrorText(err error) string {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		return fmt.Sprintf("syntax error at byte %d", se.Offset)
	case errors.As(err, &te):
		return fmt.Sprintf("field %q must be %s", te.Field, te.Type)
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		return "unknown field " + strings.TrimPrefix(err.Error(), "json: unknown field ")
	}
	return "malformed"
}
