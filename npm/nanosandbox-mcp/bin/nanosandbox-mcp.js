#!/usr/bin/env node
'use strict';
// Runs the nanosandbox-mcp binary for this platform; see ../lib/launcher.js.
require('../lib/launcher.js').main();
