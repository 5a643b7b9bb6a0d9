/*
 * UA(fixup, insn...): a user access. Emits the instruction under the local label 98
 * and an exception-table entry sending a fault on it to 'fixup'. Variadic because the
 * instruction's operands contain commas. With CF_NO_EXTABLE, the instruction alone
 * (template instances that must stay out of the table).
 *
 * The one definition for every architecture: arch/<arch>/include/cf_asm.h defines its
 * CF_EXTABLE(insn_label, fixup) (the entry's format), then includes this file.
 */
#ifndef CF_UA_H
#define CF_UA_H

#ifdef CF_NO_EXTABLE
#define UA(fixup, ...)	__VA_ARGS__
#else
#define UA(fixup, ...)	98: __VA_ARGS__; CF_EXTABLE(98b, fixup)
#endif

#endif /* CF_UA_H */
