package handlertest

// Bearer is the header pair of Env.Do that sends token.
func Bearer(token string) []string { return []string{"Authorization", "Bearer " + token} }
