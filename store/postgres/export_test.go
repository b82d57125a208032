package postgres

import "time"

// PlanEverySearch makes db plan each search for its own values, as it
// does once the catalogue holds customPlanRows listings.
func PlanEverySearch(db *DB) {
	db.size.checked.Store(time.Now().Add(time.Hour).UnixNano())
	db.size.big.Store(true)
}
