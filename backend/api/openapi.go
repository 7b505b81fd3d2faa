package api

import (
	_ "embed"
	"net/http"
)

// OpenAPI is the OpenAPI 3.1 document of the whole API, served at
// /openapi.json and checked against the handlers by the tests.
//
//go:embed openapi.json
var OpenAPI []byte

// openAPI answers GET /openapi.json.
func (s *server) openAPI(w http.ResponseWriter, r *http.Request) error {
	w.Header().Set("Access-Control-Allow-Origin", "*")
	w.Header().Set("Cache-Control", "public, max-age=300")
	respond(w, http.StatusOK, OpenAPI, "")
	return nil
}
