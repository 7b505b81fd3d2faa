package api

import (
	"fmt"
	"math"
	"regexp"
	"slices"
	"strings"
)

// A checker of the JSON Schema (2020-12) keywords openapi.json uses, enough
// to validate our responses against it. A keyword it does not know is an
// error, so the document cannot drift past what the tests check.

// schemaAnnotations are keywords that assert nothing.
var schemaAnnotations = []string{"description", "default", "example", "format", "contentEncoding", "x-list-of", "summary"}

// validate checks v, decoded JSON (any, from encoding/json-style decoding
// with float64 numbers), against schema; refs resolves "$ref" pointers.
func validate(v any, schema map[string]any, refs func(string) (map[string]any, error), path string) error {
	for k := range schema {
		switch k {
		case "$ref", "type", "properties", "required", "additionalProperties", "items", "enum", "const",
			"oneOf", "pattern", "minLength", "maxLength", "minimum", "maximum", "maxItems":
		default:
			if !slices.Contains(schemaAnnotations, k) {
				return fmt.Errorf("%s: schema keyword %q is not supported by the checker", path, k)
			}
		}
	}
	if r, ok := schema["$ref"].(string); ok {
		target, err := refs(r)
		if err != nil {
			return err
		}
		return validate(v, target, refs, path)
	}
	if t, ok := schema["type"]; ok {
		var types []string
		switch t := t.(type) {
		case string:
			types = []string{t}
		case []any:
			for _, x := range t {
				types = append(types, x.(string))
			}
		}
		if !slices.ContainsFunc(types, func(t string) bool { return hasType(v, t) }) {
			return fmt.Errorf("%s: %s is not of type %v", path, show(v), types)
		}
	}
	if c, ok := schema["const"]; ok && !equalJSON(v, c) {
		return fmt.Errorf("%s: %s is not %s", path, show(v), show(c))
	}
	if e, ok := schema["enum"].([]any); ok && !slices.ContainsFunc(e, func(x any) bool { return equalJSON(v, x) }) {
		return fmt.Errorf("%s: %s is not one of %v", path, show(v), e)
	}
	if alts, ok := schema["oneOf"].([]any); ok {
		n := 0
		var errs []string
		for _, a := range alts {
			if err := validate(v, a.(map[string]any), refs, path); err != nil {
				errs = append(errs, err.Error())
			} else {
				n++
			}
		}
		if n != 1 {
			return fmt.Errorf("%s: matches %d of oneOf, want 1: %s", path, n, strings.Join(errs, "; "))
		}
	}
	switch v := v.(type) {
	case string:
		if p, ok := schema["pattern"].(string); ok && !regexp.MustCompile(p).MatchString(v) {
			return fmt.Errorf("%s: %q does not match %s", path, v, p)
		}
		n := float64(len([]rune(v)))
		if m, ok := schema["minLength"].(float64); ok && n < m {
			return fmt.Errorf("%s: %q is shorter than %v", path, v, m)
		}
		if m, ok := schema["maxLength"].(float64); ok && n > m {
			return fmt.Errorf("%s: %q is longer than %v", path, v, m)
		}
	case float64:
		if m, ok := schema["minimum"].(float64); ok && v < m {
			return fmt.Errorf("%s: %v < %v", path, v, m)
		}
		if m, ok := schema["maximum"].(float64); ok && v > m {
			return fmt.Errorf("%s: %v > %v", path, v, m)
		}
	case []any:
		if m, ok := schema["maxItems"].(float64); ok && float64(len(v)) > m {
			return fmt.Errorf("%s: %d items, at most %v", path, len(v), m)
		}
		if items, ok := schema["items"].(map[string]any); ok {
			for i, x := range v {
				if err := validate(x, items, refs, fmt.Sprintf("%s[%d]", path, i)); err != nil {
					return err
				}
			}
		}
	case map[string]any:
		props, _ := schema["properties"].(map[string]any)
		if req, ok := schema["required"].([]any); ok {
			for _, r := range req {
				if _, ok := v[r.(string)]; !ok {
					return fmt.Errorf("%s: %q is required", path, r)
				}
			}
		}
		for k, x := range v {
			if ps, ok := props[k].(map[string]any); ok {
				if err := validate(x, ps, refs, path+"."+k); err != nil {
					return err
				}
				continue
			}
			switch ap := schema["additionalProperties"].(type) {
			case bool:
				if !ap {
					return fmt.Errorf("%s: property %q is not in the schema", path, k)
				}
			case map[string]any:
				if err := validate(x, ap, refs, path+"."+k); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

func hasType(v any, t string) bool {
	switch t {
	case "null":
		return v == nil
	case "boolean":
		_, ok := v.(bool)
		return ok
	case "string":
		_, ok := v.(string)
		return ok
	case "number":
		_, ok := v.(float64)
		return ok
	case "integer":
		f, ok := v.(float64)
		return ok && f == math.Trunc(f)
	case "array":
		_, ok := v.([]any)
		return ok
	case "object":
		_, ok := v.(map[string]any)
		return ok
	}
	return false
}

func equalJSON(a, b any) bool { return show(a) == show(b) }

func show(v any) string { return fmt.Sprintf("%#v", v) }
