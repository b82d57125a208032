package store_test

import (
	"context"
	"reflect"
	"slices"
	"testing"

	"github.com/agentsite/agentsite/store"
)

// TestCacheIsNetworkOnly: the read cache has exactly Network's methods,
// each written out (cache.go), so a method added to the roles it caches
// cannot pass through it unseen, and the roles it does not cache (accounts,
// sessions, conversations, backends) cannot be reached through it at all.
func TestCacheIsNetworkOnly(t *testing.T) {
	names := func(typ reflect.Type) []string {
		var out []string
		for m := range typ.Methods() {
			out = append(out, m.Name)
		}
		slices.Sort(out)
		return out
	}
	var c any = store.NewCache(nil, 0, 0)
	if _, ok := c.(interface {
		AppendMessage(context.Context, store.Message) (store.Message, error)
	}); ok {
		t.Error("the cache passes conversations through")
	}
	got := names(reflect.TypeFor[*store.Cache]())
	want := names(reflect.TypeFor[store.Network]())
	if !slices.Equal(got, want) {
		t.Errorf("*store.Cache has methods %v, want Network's %v", got, want)
	}
}
