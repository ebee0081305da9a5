// Public API: the one definition lives in src/runner/stats.h.
#pragma once

#include "runner/stats.h"
