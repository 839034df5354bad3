/*
 * opt.c - the command line's one option parser (cli_parse, see cli.h):
 * options anywhere among the positionals, --name VALUE or --name=VALUE,
 * "--" ends the options, "-" alone is a positional, --help and -h print the
 * command's help, and the number of positionals is checked.
 */
#include "cli.h"

#include <stdlib.h>
#include <string.h>

#include "fmt.h"

/* The name of positional argument i in cmd's usage ("ID", "NAME"), for
 * "missing ID": the words of `args` outside brackets (optional, whatever
 * words they hold: "[--index NAME]" is one group, not "NAME]") that are
 * neither options nor the value of an option of opts that takes one
 * ("--role ROLE"). */
static void arg_name(char *buf, size_t size, const cli_cmd_t *cmd, const cli_opt_t *opts, int i)
{
	const char *p = cmd ? cmd->args : "";
	bool value = false; /* the word after an option that takes a value */
	int depth = 0;

	while (*p) {
		const cli_opt_t *o;
		size_t n, k;
		int at = depth;

		while (*p == ' ')
			p++;
		n = strcspn(p, " ");
		for (k = 0; k < n; k++)
			depth += p[k] == '[' ? 1 : p[k] == ']' ? -1 : 0;
		if (n && at == 0 && *p != '[') {
			if (*p == '-') {
				for (o = opts; o && o->name; o++)
					if (strlen(o->name) == n - 2 && strncmp(o->name, p + 2, n - 2) == 0)
						break;
				value = o && o->name && o->value;
			} else if (value) {
				value = false;
			} else if (i-- == 0) {
				snprintf(buf, size, "%.*s", (int)n, p);
				return;
			}
		}
		p += n;
	}
	snprintf(buf, size, "argument");
}

/* The option argv[*i] (it starts with '-' and is not "-" or "--"): sets
 * its flag or value, taking the next argument for a value when there is no
 * '='. Returns 0, CLI_HELP_SHOWN or BS_EINVAL. */
static int parse_option(cli_ctx_t *ctx, const cli_opt_t *opts, int argc, char **argv, int *i)
{
	const char *a = argv[*i], *eq;
	const cli_opt_t *o;
	char name[256], quoted[1024];
	size_t nlen;

	if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
		cli_print_command_help(stdout, ctx->cmd);
		return CLI_HELP_SHOWN;
	}
	if (a[1] != '-')
		return cli_usage_error(ctx, "unknown option %s", fmt_quote(quoted, sizeof quoted, a));
	eq = strchr(a + 2, '=');
	nlen = eq ? (size_t)(eq - (a + 2)) : strlen(a + 2);
	for (o = opts; o && o->name; o++)
		if (strlen(o->name) == nlen && strncmp(o->name, a + 2, nlen) == 0)
			break;
	if (!o || !o->name) {
		/* named without its value: --frob=1 is "unknown option '--frob'" */
		snprintf(name, sizeof name, "%.*s", (int)nlen + 2, a);
		return cli_usage_error(ctx, "unknown option %s", fmt_quote(quoted, sizeof quoted, name));
	}
	if (o->value) {
		if (eq)
			*o->value = eq + 1;
		else if (*i + 1 < argc)
			*o->value = argv[++*i];
		else
			return cli_usage_error(ctx, "option --%s needs a value", o->name);
	} else if (eq) {
		return cli_usage_error(ctx, "option --%s takes no value", o->name);
	}
	if (o->flag)
		*o->flag = true;
	return 0;
}

int cli_parse(cli_args_t *args, cli_ctx_t *ctx, int argc, char **argv, const cli_opt_t *opts, int min, int max)
{
	char word[64], quoted[1024];
	bool only_pos = false;
	int i, rc = 0;

	args->n = 0;
	if (!(args->v = calloc((size_t)argc + 1, sizeof *args->v)))
		return bs_error(BS_ENOMEM, "out of memory");
	for (i = 0; i < argc; i++) {
		const char *a = argv[i];

		if (only_pos || a[0] != '-' || a[1] == '\0')
			args->v[args->n++] = argv[i];
		else if (strcmp(a, "--") == 0)
			only_pos = true;
		else if ((rc = parse_option(ctx, opts, argc, argv, &i)) != 0)
			goto done;
	}
	if (args->n < min) {
		arg_name(word, sizeof word, ctx->cmd, opts, args->n);
		rc = cli_usage_error(ctx, "missing %s", word);
	} else if (max >= 0 && args->n > max) {
		rc = cli_usage_error(ctx, "unexpected argument %s", fmt_quote(quoted, sizeof quoted, args->v[max]));
	}
done:
	if (rc != 0)
		cli_args_free(args);
	return rc;
}

void cli_args_free(cli_args_t *args)
{
	free(args->v);
	args->v = NULL;
	args->n = 0;
}
