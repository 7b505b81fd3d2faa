package pgstore

import (
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/adlink/adlink/internal/testpg"
)

// A role that may not create tables in the database's schema (from
// Postgres 15 on, any role but the database's owner, in schema public)
// fails the start with an error that says what to grant, not only
// Postgres's "permission denied for schema".
func TestOpenWithoutCreateSaysWhatToGrant(t *testing.T) {
	url := testpg.New(t) // a schema of its own, owned by postgres
	admin, err := pgx.Connect(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(t.Context())
	schema := url[strings.LastIndex(url, "=")+1:]
	role := "nocreate_" + schema
	if _, err := admin.Exec(t.Context(), "CREATE ROLE "+role+" LOGIN"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if conn, err := pgx.Connect(t.Context(), url); err == nil {
			conn.Exec(t.Context(), "DROP ROLE IF EXISTS "+role)
			conn.Close(t.Context())
		}
	})
	// It may use the schema, as a role granted the database is, but not
	// create in it.
	if _, err := admin.Exec(t.Context(), "GRANT USAGE ON SCHEMA "+schema+" TO "+role); err != nil {
		t.Fatal(err)
	}
	db, err := Open(t.Context(), strings.Replace(url, "postgres://postgres@", "postgres://"+role+"@", 1))
	if err == nil {
		db.Close()
		t.Fatal("Open as a role that may not create tables succeeded")
	}
	for _, want := range []string{"permission denied", `role "` + role + `"`, "createdb -O " + role, "GRANT CREATE ON SCHEMA public TO " + role} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Open: %v\nwant it to say %q", err, want)
		}
	}
}
