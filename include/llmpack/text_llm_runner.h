// Public API: the one definition lives in src/runner/text_llm_runner.h.
#pragma once

#include "runner/text_llm_runner.h"
