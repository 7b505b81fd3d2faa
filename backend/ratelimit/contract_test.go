package ratelimit_test

import (
	"testing"

	"github.com/adlink/adlink/backend/ratelimit"
	"github.com/adlink/adlink/backend/store/storetest"
)

func TestSetKeepsTheLimiterContract(t *testing.T) {
	storetest.Limits(t, func(*testing.T) ratelimit.Limiter { return ratelimit.New(ratelimit.Options{}) })
}
