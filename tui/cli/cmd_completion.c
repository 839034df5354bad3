/*
 * cmd_completion.c - `bagstore completion bash|zsh`: a shell completion
 * script generated from the command table (commands.c), so that a command
 * or an option added there completes with no other edit; and `bagstore
 * completion --list indexes|shards`, the names the script completes, read
 * at completion time through the configuration the user typed (-c FILE,
 * else $BAGSTORE_CONFIG).
 *
 * From each row the script takes the command's name (and group), its
 * options (every --NAME in its usage, and --help), which options take a
 * value and what completes it, and what completes each positional:
 *  - a value that lists its choices (`--order newest|added`) completes them;
 *    `--role ROLE` the engine's role names (bs_role_name);
 *  - `--shard NAME` shard names, `--index NAME` index names;
 *  - a positional INDEX, or NAME except in a `create` (which names a new
 *    index), index names; FILE files; one listing its choices (bash|zsh)
 *    them; anything else nothing.
 * The zsh script is the bash one under zsh's bashcompinit.
 */
#include "cli.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_OPTS 24
#define MAX_POS 8

/* What completes a word: nothing, files, names read from the store, or a
 * fixed list of choices. */
typedef struct {
	char kind[16];   /* "", "files", "indexes", "shards", "words" */
	char words[128]; /* for "words": the choices, blank-separated */
} what_t;

typedef struct {
	char name[40]; /* "--limit" */
	bool takes_value;
	what_t value;
} copt_t;

typedef struct {
	char name[48]; /* "index drop" */
	copt_t opts[MAX_OPTS];
	int nopts;
	what_t pos[MAX_POS];
	int npos;
} ccmd_t;

/* The next word of s at *p (blank-separated), brackets and the like
 * stripped; false at the end. */
static bool next_word(const char **p, char *w, size_t size)
{
	const char *s = *p;
	size_t n = 0;

	while (*s == ' ' || *s == '\n' || *s == '\t')
		s++;
	if (!*s)
		return false;
	while (*s && *s != ' ' && *s != '\n' && *s != '\t') {
		if (*s != '[' && *s != ']' && n + 1 < size)
			w[n++] = *s;
		s++;
	}
	w[n] = '\0';
	*p = s;
	return true;
}

static copt_t *find_opt(ccmd_t *c, const char *name)
{
	for (int i = 0; i < c->nopts; i++)
		if (!strcmp(c->opts[i].name, name))
			return &c->opts[i];
	return NULL;
}

static copt_t *add_opt(ccmd_t *c, const char *word)
{
	char name[40];
	size_t n = 2;

	/* "--name", up to a character that cannot be in an option's name */
	while (word[n] && (isalnum((unsigned char)word[n]) || word[n] == '-') && n + 1 < sizeof name)
		n++;
	snprintf(name, sizeof name, "%.*s", (int)n, word);
	if (n <= 2)
		return NULL;
	copt_t *o = find_opt(c, name);
	if (!o && c->nopts < MAX_OPTS) {
		o = &c->opts[c->nopts++];
		memset(o, 0, sizeof *o);
		snprintf(o->name, sizeof o->name, "%s", name);
	}
	return o;
}

/* What completes the value of option `opt` written as `value` ("NAME",
 * "newest|added"). */
static void value_of(what_t *w, const char *opt, const char *value)
{
	memset(w, 0, sizeof *w);
	if (strchr(value, '|')) {
		snprintf(w->kind, sizeof w->kind, "words");
		for (size_t i = 0; value[i] && i + 1 < sizeof w->words; i++)
			w->words[i] = value[i] == '|' ? ' ' : value[i];
	} else if (!strcmp(value, "ROLE")) {
		size_t n = 0;
		snprintf(w->kind, sizeof w->kind, "words");
		for (int r = BS_ROLE_APP; r <= BS_ROLE_READONLY; r++)
			n += (size_t)snprintf(w->words + n, sizeof w->words - n, "%s%s", n ? " " : "",
			                      bs_role_name((bs_role_t)r));
	} else if (!strcmp(opt, "--shard")) {
		snprintf(w->kind, sizeof w->kind, "shards");
	} else if (!strcmp(opt, "--index")) {
		snprintf(w->kind, sizeof w->kind, "indexes");
	} else if (!strcmp(value, "FILE") || !strcmp(value, "DIR")) {
		snprintf(w->kind, sizeof w->kind, "files");
	}
}

static void positional(ccmd_t *c, const cli_cmd_t *row, const char *word)
{
	what_t *w;

	if (c->npos >= MAX_POS)
		return;
	w = &c->pos[c->npos++];
	memset(w, 0, sizeof *w);
	if (!strncmp(word, "FILE", 4)) {
		snprintf(w->kind, sizeof w->kind, "files");
	} else if (!strcmp(word, "INDEX") || (!strcmp(word, "NAME") && strcmp(row->name, "create") != 0)) {
		snprintf(w->kind, sizeof w->kind, "indexes");
	} else if (strchr(word, '|')) {
		snprintf(w->kind, sizeof w->kind, "words");
		for (size_t i = 0; word[i] && i + 1 < sizeof w->words; i++)
			w->words[i] = word[i] == '|' ? ',' : word[i];
	}
}

/* A row of the table, read into what completes its words. */
static void read_row(ccmd_t *c, const cli_cmd_t *row)
{
	const char *p = row->args;
	char w[128], prev_opt[40] = "";

	memset(c, 0, sizeof *c);
	snprintf(c->name, sizeof c->name, "%s%s%s", row->group ? row->group : "", row->group ? " " : "", row->name);
	while (next_word(&p, w, sizeof w)) {
		if (!strcmp(w, "|"))
			continue;
		if (!strncmp(w, "--", 2)) {
			copt_t *o = add_opt(c, w);
			snprintf(prev_opt, sizeof prev_opt, "%s", o ? o->name : "");
			continue;
		}
		if (prev_opt[0]) {
			copt_t *o = find_opt(c, prev_opt);
			if (o && !o->takes_value) {
				o->takes_value = true;
				value_of(&o->value, o->name, w);
			}
			prev_opt[0] = '\0';
			continue;
		}
		if (!strstr(w, "..."))
			positional(c, row, w);
	}
	add_opt(c, "--help");
}

/* ------------------------------------------------------------ the script */

static void print_what(FILE *f, const what_t *w)
{
	if (!strcmp(w->kind, "words"))
		fprintf(f, "COMPREPLY=($(compgen -W '%s' -- \"$cur\"))", w->words);
	else if (!strcmp(w->kind, "files"))
		fputs("COMPREPLY=($(compgen -f -- \"$cur\"))", f);
	else if (w->kind[0])
		fprintf(f, "COMPREPLY=($(compgen -W \"$(_bagstore_list %s)\" -- \"$cur\"))", w->kind);
	else
		fputs(":", f);
}

static void print_bash(FILE *f, bool zsh)
{
	const cli_cmd_t *t = cli_command_table(), *r;
	char groups[256] = "", top[1024] = "";

	for (r = t; r->name; r++) {
		char *list = r->group ? groups : top;
		size_t size = r->group ? sizeof groups : sizeof top;
		const char *word = r->group ? r->group : r->name;
		char padded[80];
		snprintf(padded, sizeof padded, " %s ", word);
		char have[1100];
		snprintf(have, sizeof have, " %s ", list);
		if (strstr(have, padded))
			continue;
		size_t n = strlen(list);
		snprintf(list + n, size - n, "%s%s", n ? " " : "", word);
	}

	if (zsh)
		fputs("#compdef bagstore\n"
		      "# zsh completion for bagstore, generated by `bagstore completion zsh` from\n"
		      "# its command table: the bash completion under zsh's bashcompinit. Load it\n"
		      "# with `source <(bagstore completion zsh)`, or save it as _bagstore in a\n"
		      "# folder of $fpath.\n"
		      "autoload -U +X bashcompinit && bashcompinit\n",
		      f);
	else
		fputs("# bash completion for bagstore, generated by `bagstore completion bash`\n"
		      "# from its command table. Load it with `source <(bagstore completion bash)`,\n"
		      "# or save it as /usr/share/bash-completion/completions/bagstore.\n",
		      f);
	fputs("\n"
	      "# Index or shard names, through the configuration typed (-c FILE).\n"
	      "_bagstore_list() {\n"
	      "\tlocal cfg=() i\n"
	      "\tfor ((i = 1; i + 1 < ${#COMP_WORDS[@]}; i++)); do\n"
	      "\t\t[[ ${COMP_WORDS[i]} == -c ]] && cfg=(-c \"${COMP_WORDS[i + 1]}\")\n"
	      "\tdone\n"
	      "\t\"${COMP_WORDS[0]}\" \"${cfg[@]}\" completion --list \"$1\" 2>/dev/null\n"
	      "}\n"
	      "\n"
	      "_bagstore() {\n"
	      "\t[[ -n ${ZSH_VERSION-} ]] && setopt localoptions ksharrays\n"
	      "\tlocal cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD - 1]}\n"
	      "\tlocal i=1 cmd opts= vopts= pos= k=0 w\n"
	      "\tCOMPREPLY=()\n"
	      "\t# global options, before the command\n"
	      "\twhile ((i < COMP_CWORD)); do\n"
	      "\t\tcase ${COMP_WORDS[i]} in\n"
	      "\t\t-c) ((i += 2)) ;;\n"
	      "\t\t-*) ((i += 1)) ;;\n"
	      "\t\t*) break ;;\n"
	      "\t\tesac\n"
	      "\tdone\n"
	      "\tif ((i >= COMP_CWORD)); then\n"
	      "\t\tif [[ $prev == -c ]]; then\n"
	      "\t\t\tCOMPREPLY=($(compgen -f -- \"$cur\"))\n"
	      "\t\telif [[ $cur == -* ]]; then\n"
	      "\t\t\tCOMPREPLY=($(compgen -W '-c --read-only --help --version' -- \"$cur\"))\n"
	      "\t\telse\n",
	      f);
	fprintf(f, "\t\t\tCOMPREPLY=($(compgen -W '%s %s' -- \"$cur\"))\n", top, groups);
	fputs("\t\tfi\n"
	      "\t\treturn 0\n"
	      "\tfi\n"
	      "\tcmd=${COMP_WORDS[i]}\n"
	      "\t((i += 1))\n"
	      "\tcase $cmd in\n",
	      f);
	/* groups: their subcommands */
	for (const char *g = groups; *g;) {
		char gname[40];
		size_t n = strcspn(g, " ");
		snprintf(gname, sizeof gname, "%.*s", (int)n, g);
		fprintf(f, "\t%s)\n\t\tif ((i == COMP_CWORD)); then\n\t\t\tCOMPREPLY=($(compgen -W '", gname);
		bool first = true;
		for (r = t; r->name; r++)
			if (r->group && !strcmp(r->group, gname)) {
				fprintf(f, "%s%s", first ? "" : " ", r->name);
				first = false;
			}
		fputs("' -- \"$cur\"))\n\t\t\treturn 0\n\t\tfi\n"
		      "\t\tcmd=\"$cmd ${COMP_WORDS[i]}\"\n\t\t((i += 1)) ;;\n",
		      f);
		g += n;
		while (*g == ' ')
			g++;
	}
	fputs("\tesac\n"
	      "\t# per command: its options, those that take a value, its positionals\n"
	      "\tcase $cmd in\n",
	      f);

	ccmd_t c;
	for (r = t; r->name; r++) {
		read_row(&c, r);
		fprintf(f, "\t'%s')\n\t\topts='", c.name);
		for (int i = 0; i < c.nopts; i++)
			fprintf(f, "%s%s", i ? " " : "", c.opts[i].name);
		fputs("'\n\t\tvopts=' ", f);
		for (int i = 0; i < c.nopts; i++)
			if (c.opts[i].takes_value)
				fprintf(f, "%s ", c.opts[i].name);
		fputs("'\n\t\tpos='", f);
		for (int i = 0; i < c.npos; i++) {
			const what_t *w = &c.pos[i];
			if (!strcmp(w->kind, "words"))
				fprintf(f, "%swords:%s", i ? " " : "", w->words);
			else
				fprintf(f, "%s%s", i ? " " : "", w->kind[0] ? w->kind : "-");
		}
		fputs("'\n", f);
		bool any = false;
		for (int i = 0; i < c.nopts; i++)
			if (c.opts[i].takes_value && c.opts[i].value.kind[0])
				any = true;
		if (any) {
			fputs("\t\tcase $prev in\n", f);
			for (int i = 0; i < c.nopts; i++) {
				if (!c.opts[i].takes_value || !c.opts[i].value.kind[0])
					continue;
				fprintf(f, "\t\t%s)\n\t\t\t", c.opts[i].name);
				print_what(f, &c.opts[i].value);
				fputs("\n\t\t\treturn 0 ;;\n", f);
			}
			fputs("\t\tesac\n", f);
		}
		fputs("\t\t;;\n", f);
	}
	fputs("\t*) return 0 ;;\n"
	      "\tesac\n"
	      "\t# an option's value with nothing to complete\n"
	      "\t[[ $vopts == *\" $prev \"* ]] && return 0\n"
	      "\tif [[ $cur == -* ]]; then\n"
	      "\t\tCOMPREPLY=($(compgen -W \"$opts\" -- \"$cur\"))\n"
	      "\t\treturn 0\n"
	      "\tfi\n"
	      "\t# which positional this word is: the words before it, less options\n"
	      "\t# and their values\n"
	      "\tfor ((; i < COMP_CWORD; i++)); do\n"
	      "\t\tw=${COMP_WORDS[i]}\n"
	      "\t\tcase $w in\n"
	      "\t\t--*=*) ;;\n"
	      "\t\t-?*) [[ $vopts == *\" $w \"* ]] && ((i += 1)) ;;\n"
	      "\t\t*) ((k += 1)) ;;\n"
	      "\t\tesac\n"
	      "\tdone\n"
	      "\tset -- $pos\n"
	      "\t((k < $#)) || return 0\n"
	      "\tshift $k\n"
	      "\tcase $1 in\n"
	      "\tindexes | shards) COMPREPLY=($(compgen -W \"$(_bagstore_list \"$1\")\" -- \"$cur\")) ;;\n"
	      "\tfiles) COMPREPLY=($(compgen -f -- \"$cur\")) ;;\n"
	      "\twords:*)\n"
	      "\t\tw=${1#words:}\n"
	      "\t\tCOMPREPLY=($(compgen -W \"${w//,/ }\" -- \"$cur\")) ;;\n"
	      "\tesac\n"
	      "\treturn 0\n"
	      "}\n"
	      "complete -F _bagstore bagstore\n",
	      f);
}

/* ------------------------------------------------------------ names */

static int list_names(cli_ctx_t *ctx, const char *what)
{
	int rc;

	if (!strcmp(what, "shards")) {
		if ((rc = cli_load_config(ctx)) < 0)
			return rc;
		for (int i = 0; i < ctx->cfg->nshards; i++)
			printf("%s\n", ctx->cfg->shards[i].name);
		return 0;
	}
	if (strcmp(what, "indexes") != 0)
		return cli_usage_error(ctx, "--list takes indexes or shards, not '%s'", what);
	/* a completion must not hang on a shard that does not answer */
	if ((rc = cli_load_config(ctx)) < 0)
		return rc;
	if (ctx->cfg->connect_timeout > 1)
		ctx->cfg->connect_timeout = 1;
	if (ctx->cfg->read_timeout > 2)
		ctx->cfg->read_timeout = 2;
	if ((rc = cli_open(ctx)) < 0)
		return rc;
	bs_index_list_t l = { 0 };
	if ((rc = bs_index_list(&l, ctx->st)) < 0)
		return rc;
	for (int i = 0; i < l.len; i++)
		printf("%s\n", l.items[i].name);
	bs_index_list_free(&l);
	return 0;
}

int cli_cmd_completion(cli_ctx_t *ctx, int argc, char **argv)
{
	const char *list = NULL;
	const cli_opt_t opts[] = { { "list", &list, NULL }, { NULL, NULL, NULL } };
	cli_args_t a;
	int rc = cli_parse(&a, ctx, argc, argv, opts, 0, 1);

	if (rc)
		goto done;
	if (list) {
		if (a.n)
			rc = cli_usage_error(ctx, "--list takes no shell");
		else
			rc = list_names(ctx, list);
		goto done;
	}
	if (a.n != 1 || (strcmp(a.v[0], "bash") != 0 && strcmp(a.v[0], "zsh") != 0)) {
		rc = cli_usage_error(ctx, "which shell: bash or zsh");
		goto done;
	}
	print_bash(stdout, !strcmp(a.v[0], "zsh"));
	if (fflush(stdout) != 0)
		rc = bs_error(BS_ERROR, "cannot write the script");
done:
	cli_args_free(&a);
	return rc;
}
