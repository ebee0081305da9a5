// Public API: the one definition lives in src/runner/generation_config.h.
#pragma once

#include "runner/generation_config.h"
