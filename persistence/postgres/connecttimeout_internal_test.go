package postgres

import (
	"context"
	"fmt"
	"net/url"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/persistence/persistencetest"
)

// SPEC S3: a DSN's connect_timeout is the operator's word on how long the
// pool's later connects wait, connect_timeout=0 (wait for ever, as libpq
// reads it) included: New keeps it, in URL and keyword/value form alike,
// and only a DSN without one gets Config.ConnectTimeout. The last of a
// repeated key counts, as it does for the driver.
func TestNew_KeepsTheDSNsConnectTimeoutZero(t *testing.T) {
	dsn := persistencetest.PostgresDSN(t)
	cc, err := pgx.ParseConfig(dsn)
	require.NoError(t, err)
	u, err := url.Parse(dsn)
	require.NoError(t, err)
	withQuery := func(key, value string) string {
		v := *u
		q := v.Query()
		q.Set(key, value)
		v.RawQuery = q.Encode()
		return v.String()
	}
	kv := fmt.Sprintf("host=%s port=%d user=%s dbname=%s sslmode=disable", cc.Host, cc.Port, cc.User, cc.Database)
	if cc.Password != "" {
		kv += " password='" + cc.Password + "'"
	}
	const cfgTimeout = 9 * time.Second
	for _, tc := range []struct {
		name string
		dsn  string
		want time.Duration
	}{
		{"URL without connect_timeout", dsn, cfgTimeout},
		{"URL with connect_timeout=0", withQuery("connect_timeout", "0"), 0},
		{"URL with connect_timeout=7", withQuery("connect_timeout", "7"), 7 * time.Second},
		{"URL with 0, then 5", withQuery("connect_timeout", "0") + "&connect_timeout=5", 5 * time.Second},
		{"keyword/value without connect_timeout", kv, cfgTimeout},
		{"keyword/value with connect_timeout=0", kv + " connect_timeout=0", 0},
		{"keyword/value with connect_timeout = '0'", "connect_timeout = '0' " + kv, 0},
		{"keyword/value with 0, then 5", kv + " connect_timeout=0 connect_timeout=5", 5 * time.Second},
	} {
		s, err := New(context.Background(), Config{DSN: tc.dsn, ConnectTimeout: cfgTimeout})
		require.NoError(t, err, tc.name)
		assert.Equal(t, tc.want, s.pool.Config().ConnConfig.ConnectTimeout, tc.name)
		require.NoError(t, s.Close())
	}
}
