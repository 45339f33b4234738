// The terminal front end: view models, coordinator, cell grid, renderer.
