package primtorch

// UpdateGolden exposes -update to the external test package (listing_test.go).
var UpdateGolden = update
