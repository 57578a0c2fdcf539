/* call_key.c - the call key's field table as data (see call_key.h). */
#include "evidence/call_key.h"

#define ROW(id, pointer, type, need) {#id, pointer, type, need},
const struct call_key_field call_key_fields[] = {CALL_KEY_FIELDS(ROW)};
#undef ROW
const size_t call_key_nfields = sizeof call_key_fields / sizeof *call_key_fields;
