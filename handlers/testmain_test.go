package handlers_test

import (
	"testing"

	"github.com/agentsite/agentsite/store/postgres/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }
