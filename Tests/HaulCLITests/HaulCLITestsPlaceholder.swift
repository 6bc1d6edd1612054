// Placeholder so the HaulCLITests target has a source file; replace with real CLI tests.
