/* record_time.c: the calendar of record.h: ISO 8601 UTC times, proleptic
 * Gregorian, no leap seconds (run.json's start_time and end_time, the
 * report's date).  Pure arithmetic: no time zone, no locale, no libc time
 * functions, so a year 0-9999 formats the same everywhere. */
#include "record.h"

#include <stdio.h>
#include <string.h>

/* Days since 1970-01-01 of y-m-d (m in 1..12), by counting from March, so
 * that the leap day ends the year. */
static int64_t days_from_civil(int64_t y, int64_t m, int64_t d)
{
    y -= m <= 2;
    const int64_t era = (y >= 0 ? y : y - 399) / 400;
    const int64_t yoe = y - era * 400;                                  /* [0, 399] */
    const int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1; /* [0, 365] */
    const int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;          /* [0, 146096] */
    return era * 146097 + doe - 719468;
}

static void civil_from_days(int64_t z, int64_t *y, int *m, int *d)
{
    z += 719468;
    const int64_t era = (z >= 0 ? z : z - 146096) / 146097;
    const int64_t doe = z - era * 146097;
    const int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    const int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    const int64_t mp = (5 * doy + 2) / 153;
    *d = (int)(doy - (153 * mp + 2) / 5 + 1);
    *m = (int)(mp < 10 ? mp + 3 : mp - 9);
    *y = yoe + era * 400 + (*m <= 2);
}

/* Years 0000 to 9999: what four digits hold. */
#define TIME_MIN (-62167219200LL) /* 0000-01-01T00:00:00Z */
#define TIME_MAX 253402300799LL   /* 9999-12-31T23:59:59Z */

int rec_time_format(int64_t t, char *buf)
{
    if (t < TIME_MIN || t > TIME_MAX) return AN_EINVAL;
    int64_t days = t / 86400, secs = t % 86400;
    if (secs < 0) {
        secs += 86400;
        days -= 1;
    }
    int64_t y;
    int m, d;
    civil_from_days(days, &y, &m, &d);
    /* the fields are in range: 20 characters; the compiler cannot know */
    char text[64];
    snprintf(text, sizeof text, "%04d-%02d-%02dT%02d:%02d:%02dZ", (int)y, m, d, (int)(secs / 3600),
             (int)(secs / 60 % 60), (int)(secs % 60));
    memcpy(buf, text, 21);
    return AN_OK;
}

static bool digits(const char *s, int n, int *v)
{
    *v = 0;
    for (int i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9') return false;
        *v = *v * 10 + (s[i] - '0');
    }
    return true;
}

int rec_time_parse(const char *s, int64_t *t)
{
    static const int mdays[12] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    int y, mo, d, h, mi, se;
    if (!s || strlen(s) != 20 || !digits(s, 4, &y) || s[4] != '-' || !digits(s + 5, 2, &mo) ||
        s[7] != '-' || !digits(s + 8, 2, &d) || s[10] != 'T' || !digits(s + 11, 2, &h) ||
        s[13] != ':' || !digits(s + 14, 2, &mi) || s[16] != ':' || !digits(s + 17, 2, &se) ||
        s[19] != 'Z')
        return AN_EINVAL;
    const bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    if (mo < 1 || mo > 12 || d < 1 || d > mdays[mo - 1] || (mo == 2 && d == 29 && !leap) ||
        h > 23 || mi > 59 || se > 59)
        return AN_EINVAL;
    *t = days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + se;
    return AN_OK;
}
