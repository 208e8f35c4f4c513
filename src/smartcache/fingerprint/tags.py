"""Coarse tags of one normalised turn, by rules written for Chinese and English.

Each detector is a small table of patterns, so a reader can see what fires:

    >>> sorted(f.value for f in change_flags("不对,a方案不适用,改走b方案"))
    ['correction', 'replacement']
    >>> task_skeleton("退款申请多久能到账"), intent_domain("退款申请多久能到账")
    ('how_long', 'support')
    >>> is_time_sensitive("今天的汇率是多少"), is_time_sensitive("what is the current price of btc")
    (True, True)
"""

from __future__ import annotations

import enum
import re
from functools import lru_cache
from typing import Iterable

from smartcache.fingerprint.addressed import speaks_to_conversation
from smartcache.fingerprint.timely import depends_on_now
from smartcache.fingerprint.lexicon import action_classes, antonym_pairs, generic_actions


class ChangeFlag(str, enum.Enum):
    """What the current turn does to the request before it."""

    NEGATION = "negation"
    ADDITION = "addition"
    REMOVAL = "removal"
    REPLACEMENT = "replacement"
    CORRECTION = "correction"
    RESET = "reset"


def _rx(*parts: str) -> re.Pattern[str]:
    return re.compile("|".join(parts), re.IGNORECASE)


# Intent negation: "别开启", "不要", "don't". Not "打不通"/"can't" (a complaint, not a reversed ask).
_BOUND = r"(?!超过|超出|超|高于|低于|多于|少于|太)"   # "别超过五千" states a limit, it reverses nothing
NEGATION = _rx(
    rf"(?<![特区分类级识告性个差离鉴辨错])别(?![人墅的处字]){_BOUND}", rf"(?<!要)不要{_BOUND}", r"不用", r"无需", r"不需要", r"禁止", r"请勿",
    r"不必", r"不想", r"不准", r"不许", r"切勿",
    r"不(?:开启|打开|启用|使用|包括|包含|含|带|去|住|吃|加|选|订|买|装|安装|删除|保留|考虑|开|用)",
    r"\bdon'?t\b", r"\bdo not\b", r"\bdoesn'?t\b", r"\bdoes not\b", r"\bnever\b", r"\bwithout\b", r"\bno need\b",
    r"\bnot to\b", r"\bavoid\b", r"\bexclude\b", r"\bexcept\b", r"\bskip\b",
    # "I will not" is a negation, and so is its contraction when it is the user's own intent ("I
    # won't be renewing my lease"); "it won't start" is a complaint. "I won't be able to" counts as
    # "I will not be able to" does: against "I will be able to" it reverses the request (against
    # "I can't", a complaint here, the two differ: a lost hit, never a wrong one).
    r"\b(?:i|we) won'?t\b",
    r"\bnot\b(?! only| more| less| over| under| exceed| too)",
)
ADDITION = _rx(r"再加", r"加上", r"另外加", r"还要", r"增加(?!到)", r"添加", r"补充", r"多加", r"顺便加", r"加个", r"再来",
               r"\balso add\b", r"\badd\b", r"\bplus\b", r"\binclude\b", r"\badditionally\b", r"\bas well\b",
               r"\bon top of\b", r"\balso\b")
REMOVAL = _rx(r"去掉", r"删除", r"删掉", r"移除", r"去除", r"不要了", r"拿掉", r"取消掉", r"省掉", r"\bremove\b",
              r"\bdrop\b", r"\bdelete\b", r"\bget rid of\b", r"\bleave out\b", r"\bcut\b")
REPLACEMENT = _rx(r"换成", r"改成", r"改为", r"替换", r"变成", r"提高到", r"提升到", r"增加到", r"降到", r"降低到", r"减少到",
                  r"调整为", r"调整到", r"改到", r"改走", r"换到", r"换个", r"换一", r"升级到", r"升到", r"改用", r"放宽到",
                  r"延长到", r"缩短到", r"改一下", r"如果是", r"要是",
                  # "再短一点", "能再简洁一些吗": the last answer again, a little more so, said to the assistant
                  # (the turn opens with it, a clause's end closes it; not "怎么让网速再快一点", "再看看这些")
                  r"^\W*(?:(?:能|可以|能不能|可不可以|请|麻烦|你|帮我|写得|改得)\W*)?再[\u4e00-\u9fff]{1,4}?"
                  r"(?:一点儿?|一些|点儿?|(?<![这那哪])些)[吧吗呢啊]?(?:[，。！？,.!?~]|$)",
                  r"\binstead\b", r"\bchange (?:it |that |this |the \w+ )?to\b", r"\bswitch (?:it )?to\b",
                  r"\breplace\b", r"\bmake it\b", r"\b(?:increase|raise|lower|reduce|bump|extend|cut|shorten) .{0,30}\bto\b",
                  r"\bwhat if\b", r"\bhow about\b", r"\brather than\b", r"\bupgrade to\b")
# Correction and reset markers: each counts only where it speaks to the conversation
# (``addressed.speaks_to_conversation``: "我的代码报错了", "how do I start over in a game" do not).
CORRECTION = _rx(r"不对", r"不是的", r"错了", r"搞错", r"说错", r"弄错", r"更正", r"纠正", r"我是说", r"我的意思是",
                 r"不是.{1,20}而是", r"我说的是", r"理解错", r"不适用", r"行不通",
                 # a slip restated at once, or put to the assistant: "我刚才发错了，是这张图", "你看错了"
                 r"[贴发输填选记听看]错了?(?=[,.;:!?]\W*(?:其实|实际上?|应该|正确的?|真正的?[^,.;:!?]{0,8})?是(?!什么|不是|否|哪|谁|多少|几)|[,.;:!?]\W*不是)",
                 r"你[贴发输填选记听看]错", r"有误(?=[,.;:!?]\W*(?:其实|实际上?|应该|正确的?|真正的?[^,.;:!?]{0,8})?是(?!什么|不是|否|哪|谁|多少|几))",
                 r"(?:^|[,.;:!?]|不对|不是)\W*(?:我(?:刚才|其实)?)?问的是", r"不是这个意思", r"这不是我(?:问|要)的(?=\W|$)",
                 r"\bthat'?s (?:wrong|not right|incorrect)\b", r"\bthat is (?:wrong|not right|incorrect)\b",
                 r"\bincorrect\b", r"\bi meant\b", r"\bcorrection\b", r"\bscratch that\b", r"\bmy mistake\b",
                 r"\bi made a mistake\b", r"\bno,? wait\b", r"\byou misunderstood\b",
                 r"\bnot what i (?:asked|meant|said|wanted)\b", r"\bdoesn'?t apply\b", r"\bwon'?t work\b",
                 # slips of this conversation, not of the world ("i misread the instructions", "fix the typo")
                 r"\bi (?:misspoke|misspelled|mistyped|misread|misremembered)\b"
                 r"(?=\W*(?:$|[:,.;-])|[^.?!]{0,30}\b(?:earlier|before|above|just now|last message|previous message)\b)",
                 r"(?:^|[.!?;:,]\s*)(?:(?:sorry|oops|oh)\W+)?typo\b(?=\s*[:,-])", r"\bi got (?:that|it|this) wrong\b",
                 r"^\W*wrong\W*$", r"\byou (?:copied|wrote|read|got|heard|misread)(?: (?:it|that|this|me|my \w+))? wrong\b",
                 r"\bnot the \w+ i gave you\b", r"\byou\b[^.?!]{0,60}\bbut i asked (?:for|about)\b",
                 r"(?:^|[.!?;:]\s*)(?:(?:no|sorry|oops|wait|actually|hold on|well)\W+)*"
                 r"i (?:said|asked for|asked about|wrote|typed) [^,.;]{1,40}(?:,? not\b| but (?:it'?s|it is|i meant))",
                 r"\bignore (?:the|what|my) [^.]{0,30}\bi (?:pasted|sent|wrote|said|gave you) (?:earlier|before|above)\b")
RESET = _rx(r"重新开始", r"从头开始", r"重来", r"清空", r"忘掉之前", r"忘记之前", r"忽略之前", r"忽略上面", r"新的对话", r"新对话",
            r"(?:^|[,.:;!?]|算了|那就?|我们|咱们|还是)(?:从头再?|重新)来过?(?=吧|[,.:;!?]|$)",
            r"(?:说的|聊的|讲的)[^,.;!?]{0,4}(?:都|全部?)?作废", r"把(?:之前|前面|刚才|上面)[^,.;!?]{0,8}(?:都|全)?忘(?:了|掉)",
            r"(?:忽略|忘掉)(?:前面|刚才|以上)的?(?:所有|全部)?(?:内容|对话|要求|指令|设定|说的|聊的)",
            r"(?:之前|前面|刚才|上面)(?:那些|的|说的|聊的)?[^,.;!?]{0,4}[都全]忘(?:了|掉)吧",
            r"重置(?:一下)?(?:对话|聊天|上下文)", r"当我(?:前面|之前|刚才)(?:说的)?(?:什么都|都)?没说(?!话)",
            r"\bstart over\b", r"\bforget (?:everything|all|what i said|the above|previous|that)\b",
            r"\bforget (?:our|this|the) (?:previous |earlier |last |whole )?(?:chat|conversation|discussion)\b",
            r"\bignore (?:all )?(?:previous|the above|everything)\b", r"\bnew conversation\b", r"\bfrom scratch\b",
            r"\bclear the context\b", r"\bbegin again\b",
            r"\b(?:let'?s|let us|can we|could we|we should|we'll) (?:just )?start (?:(?:over|again|afresh|fresh|anew)\b|"
            r"from (?:zero|the (?:very )?(?:beginning|top|start))\b)",
            r"\bstart (?:this|the|our) (?:conversation|chat) over\b",
            r"\b(?:scrap|disregard|drop|throw out|wipe) (?:this|the|our) (?:whole )?(?:conversation|chat)\b",
            r"\b(?:scrap|disregard|forget|ignore) (?:everything|all (?:of )?(?:this|that|it)) (?:above|before|so far|"
            r"i(?:'ve| have)? (?:said|told you)|in this (?:chat|conversation))\b",
            r"\blet'?s throw (?:all (?:of )?(?:this|that|it)|everything) out\b", r"^\W*start (?:fresh|afresh|anew)\b",
            r"\bdisregard (?:what i said|the above|previous)\b",
            r"\bpretend (?:we never (?:talked|spoke)|this (?:conversation |chat )?never happened)\b",
            r"\b(?:reset|restart) (?:the |this |our )?(?:conversation|chat|context|session)\b", r"\blet'?s reset\b")
TOPIC_SWITCH = _rx(r"换个话题", r"另外问(?:一下|个)", r"另一个问题", r"顺便问", r"题外话", r"说点别的", r"不聊这个", r"问个别的",
                   r"\bby the way\b", r"\bbtw\b", r"\bunrelated\b", r"\b(?:a )?different question\b",
                   r"\banother question\b", r"\bchange of topic\b", r"\bswitching topics\b", r"\bon another note\b",
                   r"\bnew topic\b")
# What makes an answer depend on when it is asked: a time word, a state that changes (a price, a
# score, an office holder, the next departure, a countdown). Each counts only where it is what
# is asked (``timely.depends_on_now``: not "今晚家里来朋友，排骨怎么做", "how are you today").
TIME_SENSITIVE = _rx(
    r"今天", r"今日", r"今晚", r"明天", r"昨天", r"此刻", r"实时(?!操作系统|系统|渲染|通信|计算|数据库|处理)", r"最新", r"刚刚",
    r"汇率", r"股价", r"比分", r"行情", r"油价", r"金价", r"几点了",
    r"天气(?=[^,.;!?]{0,6}(?:怎么样|如何|怎样|咋样|好吗|好不好|冷|热|晴|阴|雨|雪|多少度|几度|会|预报说))", r"天气(?=\W*$)",
    r"(?:最新|最近|热点|热门|头条|重大)的?新闻", r"新闻(?:头条|热点)", r"有(?:什么|哪些|啥)(?:新|大)?新闻",
    r"现在.{0,8}(?:价格|多少钱|票价|人多)", r"现在还", r"还在线", r"机票.{0,4}(?:价格|多少钱)",
    r"现在(?:几点|什么时间|是几号|的?(?:价格|汇率|天气|股价|行情|时间)|还有|开门|营业)",
    r"(?<!我)现在(?!我|可以|能|可不可以|能不能|就|去|办|提交|申请|还|\d|[一二三四五六七八九十两]+[个岁周天月年])[^,.;!?]{0,12}"
    r"(?:吗|多少|多久|几|有没有|怎么样|是不是|哪)",
    r"这个?周末|本周末?|这[一1]?周|下[一1]?周|这个月|本月|下个?月|今年|本赛季|这个?赛季|这几天|这阵子|近期|近来|目前|眼下|昨晚|昨夜|前天|后天",
    r"当前(?!这|目录|路径|文件|页面|窗口|用户|行|列|分支|进程|线程|对象|元素|节点|值|时间戳|url|路由|位置|选中|登录|光标|标签|tab)",
    r"最近(?![的]?(?:[一1两2-9几]|\d+)[次个条天周月年笔单])", r"这个季节|当季",
    r"下[一1][班趟次场期届轮]", r"(?:离|距离?)[^,.;!?]{1,12}还有(?:多少天|几天|多久|多长时间)",
    r"(?:房价|均价|利率|lpr|净值|币价)[^,.;!?]{0,8}(?:多少|几|什么价|涨|跌)",
    # A market's price, asked as a price ("猪肉多少钱一斤", "黄金多少钱一克"); not what the thing is
    # ("黄金的密度是多少", "红烧肉要放多少猪肉").
    r"(?:黄金(?!分割|时间|比例|周|期|档|法则|会员)|白银|铂金|钯金|比特币|以太坊|狗狗币|原油|铜价|铁矿石|生猪|期货)"
    r"[^,.;!?]{0,6}(?:多少钱|多少元|几块钱|什么价|价格|价钱|行情|涨了|跌了|涨价|降价)",
    r"(?:猪肉|牛肉|羊肉|鸡蛋|大米|面粉|菜价|肉价|猪价|蔬菜|水果(?!刀|店|沙拉|盘|机|茶)|白菜|汽油|柴油|[92][258]号(?:汽)?油|天然气|大豆|玉米|小麦|棉花|白糖)"
    r"[^,.;!?]{0,6}(?:多少钱|多少元|几块钱|什么价|价格|价钱|行情|涨价|降价)",
    # Goods in stock, a strike, the roads: the state of the moment ("这款手机有货吗", "地铁罢工了吗", "三环堵不堵").
    r"(?:还)?有货吗|有没有货|有现货吗|缺货(?:了)?吗|到货了吗|补货了吗|售罄了吗|卖完了吗|"
    r"罢工(?:了)?吗|有没有罢工|会不会罢工|路况(?:怎么样|如何|好吗|咋样)|(?:路|高速|环|桥|隧道|路口|街|大道|收费站|高架)[^,.;!?]{0,3}堵(?:不堵|车吗|吗|得厉害吗)|(?:大盘|股市|a股|港股|美股|纳指|道指|恒指|上证|创业板)"
    r"[^,.;!?]{0,4}(?:涨了|跌了|涨没涨|跌没跌|怎么样了?(?=\W*$|吗)|表现如何|行情)",
    r"(?<!第.任)(?<!首任)(?<!历任)(?<!前任)(?:总统|首相|总理|ceo|董事长|主席|市长|州长|省长|秘书长|主教练|行长|队长)是(?:谁|哪位|哪个人)", r"现任|首富",
    r"谁是[^,.;!?]{0,6}(?:总统|首相|总理|ceo|董事长|主席|市长|首富)",
    r"排名第[一1]|排行榜|积分榜|榜首|热搜", r"(?:正在|最近|近期|即将|本周|这周)上映|上映了吗|在映|热映",
    r"(?:外面|那边|这边|那里|这里)[^,.;!?]{0,4}(?:冷|热|下雨|下雪|刮风)",
    r"\btoday\b", r"\btonight\b", r"\btomorrow\b", r"\byesterday\b", r"\blast night\b",
    r"\blatest\b(?! (?:commit|changes?|message|file|entry|row|record|draft|one)\b)",
    r"\breal-?time\b(?! (?:operating system|os|systems?|applications?|programming|processing|rendering|communications?|"
    r"computing|strateg(?:y|ies)|games?|collaboration|analytics)\b)",
    r"\bright now\b", r"\bat the moment\b", r"\bstock price\b", r"\bexchange rate\b",
    r"\b(?:what'?s|what is|how'?s|how is|what will)(?: the)? weather\b",
    r"\bweather (?:like |forecast |report )?(?:in|at|for|today|tomorrow|tonight|this|next|now|there|here|outside)\b",
    r"\b(?!(?:stormy|bad|good|cold|hot|nice|warm|wet|dry|extreme|severe|rainy|windy|sunny|cloudy|foggy|"
    r"freezing|mild|the) weather)\w+ weather\W*$", r"\bweather forecast\b",
    r"\bforecast (?:for )?(?:today|tomorrow|tonight|this weekend)\b",
    r"\bis it (?:raining|snowing|sunny|cold|hot|windy|foggy)\b(?![^?.!]*\b(?:in|during) (?:the )?(?:winter|summer|spring|autumn|fall|"
    r"january|february|march|april|may|june|july|august|september|october|november|december)\b)", r"\bwill it (?:rain|snow|be (?:sunny|cold|hot|windy))\b",
    r"\b(?:expect|any) (?:storms?|rain|snow)\b",
    r"\b(?:latest|today'?s|top|breaking|recent|current|this (?:week|morning)'?s?|any|new) news\b",
    r"\bnews (?:today|headlines)\b", r"\bwhat'?s (?:in )?the news\b", r"\bin the news\b", r"\b(?:today'?s|latest|top|news) headlines\b",
    r"\bcurrent (?:price|time|weather|rate|score|status|ceo|president|prime minister|leader|version|release|stable|"
    r"champion|holder|record|state of|standings?|rankings?|polic(?:y|ies)|interest|mortgage|exchange|value|"
    r"population|season|events)\b", r"\bcurrently\b",
    r"\bwhat time is it\b", r"\blive score\b", r"\bthis (?:morning|afternoon|evening)\b",
    r"\bthis (?:weekend|week|month|year|season|cycle|semester|quarter)\b", r"\bthese days\b",
    r"(?<!to )\bnewest\b(?! first)", r"\bmost recent\b(?! (?:commit|changes?|message|file|entry|row|record|version|order|email|one|date)\b)", r"\brecent(?:ly)? (?:released?|updates?|news|developments?|changes|events)\b",
    r"\bany (?:updates?|news) (?:on|about)\b",
    r"\bnext (?:train|bus|flight|ferry|game|match|episode|season|election|race|launch|test|exam|event|concert|show|"
    r"release|update|holiday|sat|act)\b", r"\bwhen (?:do|does|is|are|will)\b[^.?!]{0,40}\bnext\b", r"\bwhen'?s the next\b",
    # A countdown to a date, not a wait for something to happen ("how many days until i get my refund").
    r"\bhow many (?:\w+ )?(?:days|weeks|months|hours)(?: do (?:i|we|you) have)?(?: are)? (?:left|remaining)"
    r"(?: (?:in|until|till|before|to)\b|\W*$)",
    r"\bhow (?:many|much) (?:\w+ )?(?:days|weeks|months|hours|time) (?:until|till)\b(?! (?:i|you|we|it|the (?:refund|package|order|money))\b)(?! my (?!birthday|due date|wedding|anniversary|"
    r"vacation|trip|exam|graduation|retirement|lease|visa|passport)\w)",
    r"\bdays (?:until|till|left)\b(?! (?:i|you|we|it|my)\b)", r"\bhow old (?:is|am|are|will) [\w' ]{1,20}\bnow\b",
    r"\bwho(?: is|'s) (?:the )?(?:current )?(?:president|prime minister|pm|chancellor|ceo|chairman|head coach|coach|"
    r"mayor|governor|leader|secretary[- ]general|king|queen|pope|speaker|chief executive) of\b",
    r"\bhow much (?:is|are|'s|does)\b[^.?!]{0,20}\b(?:bitcoin|btc|ethereum|eth|dogecoin|gold|silver|gas|oil|stock|shares?)\b",
    r"\b(?:bitcoin|btc|ethereum|eth|gold|silver|oil|gas|stock|share) (?:price|prices|worth|trading)\b",
    r"\bprice of (?:bitcoin|btc|ethereum|eth|gold|silver|oil|gas|a barrel)\b",
    r"\bprice of (?:an? |one )?(?:troy )?(?:ounce|gram|barrel|gallon|kilo|pound) of (?:gold|silver|platinum|oil|crude|gas|copper)\b",
    r"\b(?:bitcoin|btc|ethereum|eth|gold|silver|oil)'s price\b",
    r"\bwhat'?s the score\b", r"\bwho (?:won|is winning|is leading|'s leading|'s winning) (?:the )?(?:last|latest)\b",
    r"\bwho(?:'s| is) (?:leading|winning|ahead)\b", r"\bstandings\b", r"\bon this day\b",
    r"\b(?:number one|#1|top) (?:song|single|album|movie|film|show|book)\b(?! (?:in|of) (?:\d{4}|all time))",
    r"\b(?:playing|showing|out) in (?:theaters|theatres|cinemas)\b", r"\b(?:this weekend'?s|weekend|top) box office\b|\bbox office (?:this|today|now)\b",
    r"\bstill (?:open|available|on sale|accepting)\b",
    # the date itself, results, openings, outages, holidays, relative dates, ages, conversions, releases
    r"\bwhat (?:day|date|year|month) is (?:it|today)\b", r"\bwhat(?:'s| is) (?:the|today'?s) date\b",
    r"现在是(?:哪|几|什么)(?:一)?[年月]", r"今年是哪[一1]?年",
    r"\bwho won (?:the )?(?:super bowl|world cup|election|game|match|championship|finals?|world series|grand prix|race|"
    r"oscars?|award|league|tournament)\b", r"(?:谁赢了|哪队赢了|赢了(?:吗|没)|(?<![码字号])输了(?:吗|没)(?!反应|有)|冠军是谁|夺冠了(?:吗|没))",
    r"\bopen (?:now|right now|tonight)\b", r"\b(?:is|are) [\w.]+(?: [\w.]+)? down\W*$", r"崩了吗|是不是崩了|挂了吗|宕机了吗",
    r"\bwhen is (?:easter|thanksgiving|chinese new year|lunar new year|mother'?s day|father'?s day|black friday|"
    r"labor day|memorial day|ramadan|diwali|passover|hanukkah|the tax deadline)\b",
    r"(?:春节|中秋节?|端午节?|元宵节?|国庆节?|清明节?|除夕|五一|母亲节|父亲节|双十一|双11)(?:是)?(?:几号|哪天|什么时候|放几天|放假安排)",
    r"(?:春节|中秋|国庆|高考|考研|元旦|过年)还有(?:多少|几)天",
    r"\b(?:next|last|this) (?:monday|tuesday|wednesday|thursday|friday|saturday|sunday)\b", r"\blast (?:month|week|year)\b",
    r"明年|去年|上个?月(?!球|亮|台|饼|色|光)|上[一1]?周|这个?(?:星期|礼拜)[一二三四五六日天1-7]|[这下上]个?周[1-7日天](?=是?几号|是哪天)",
    r"\bhow old (?:is|are) (?!the |my |your |a |an |this |that |these |those )[a-z]+", r"\bhow old am i\b",
    r"(?<![你您])(?:多大了|今年几岁|今年多大)",
    r"\b\d+(?:\.\d+)? ?(?:usd|eur|gbp|jpy|cny|rmb|dollars?|euros?|pounds?|yen|yuan) (?:to|in) (?:usd|eur|gbp|jpy|cny|rmb|"
    r"dollars?|euros?|pounds?|yen|yuan)\b", r"(?:美元|欧元|英镑|日元|港币|美金|人民币)[^,.;!?]{0,4}(?:是|等于|换|兑换?)多少",
    r"[$€£¥]\s?\d[\d,.]*\s?(?:(?:is|in|to)\s)?(?:usd|eur|euros?|gbp|pounds?|jpy|yen|cny|rmb|yuan|dollars?|人民币|欧元|英镑|日元|"
    r"港币|美元)|[$€£¥]\d[\d,.]*(?:是|等于|换|兑换?)多少",
    r"\bstock (?:doing|price|up|down)\b",
    r"\bwhen (?:does|will|is) [\w' ]{1,30} (?:come out|coming out|release|be released|launch)\b",
    r"\bhas [\w'.\- ]{1,30} (?:been released|come out|launched)\b", r"(?:什么时候|哪天)(?:发售|发布|上市|上线)|(?:发布|发售|上市)了吗",
    r"\bwho(?: is|'s) (?:the )?(?:us|u\.s\.|american|british|uk|french|german|chinese|japanese|indian|canadian) "
    r"(?:president|prime minister|chancellor|leader)\b", r"\bstill alive\b|还活着吗|还在世吗",
    r"(?:下雨|下雪)了吗|(?:会|要)下(?:雨|雪)吗|\bdo i need (?:an? )?(?:umbrella|jacket|coat|chains|sunscreen)\b",
    r"(?:延误|晚点|停运)了吗|有没有(?:延误|晚点)|\b(?:is|are) (?![^?.!]{0,40}\b(?:if|when|whether|rights?|refunds?|compensation)\b)[\w': -]{0,40}(?:delayed|cancelled|canceled)\b",
    r"\bwhen does the [\w' ]{1,30} (?:game|match|show|concert|parade|race) start\b",
    r"\bwhat time is the [\w' ]{0,30}(?:game|match|super bowl|parade|concert|race|kickoff)\b", r"赛程|发布会(?:是)?(?:什么时候|几点)|什么时候开赛",
    r"\bis it too late to (?:file|apply|register|appeal|submit|enroll|sign up|plant|book)\b", r"还能报名吗|还来得及报名",
    r"\b(?:is|are)\b[^.?!]{0,30}\bin stock\b|还有(?:余)?票吗|有票吗|还有余票", r"^\W*did (?:the )?[\w' ]{1,25} win\b",
    r"冠军是哪(?:个|支|一)?(?:支)?(?:球)?队",
    r"\bhow (?:long|many years|many months) ago (?:was|did|were)\b", r"\b(?:days?|weeks?|months?|hours?) from (?:now|today)\b", r"\bwhat (?:year|day|date|month) will it be\b",
    r"\bhow many (?:days|weeks|months|years) old (?:am|is|are|will)\b", r"过去(?:多少|几)(?:年|天|个月)了|已经过去(?:多少|几)(?:年|天|个月)了",
    # A market's price or a lender's rate, asked as what it is ("how much is a dozen eggs", "what are
    # mortgage rates"); not what one is ("what is a mortgage rate"), nor a conversion ("how much is a
    # gallon in liters"); how a price is set is read apart (timely._EXPLAINS).
    r"\b(?:gas|gasoline|petrol|diesel|crude|egg|beef|milk|grocery|food|lumber|copper|wheat|corn|coffee|housing|home|"
    r"rent|rental) prices?\b(?! index)",
    r"\bhow much (?:is|are) (?:a |one )?(?:gallon|liter|litre|barrel|dozen|carton|pound|ounce|kilo|loaf)s? "
    r"(?:of )?(?!in\b|to\b)[a-z](?![^?.!]*\b(?:in|to|into) (?:pounds?|cups?|grams?|liters?|litres?|ounces?|kilos?|kg|lbs?|ml|"
    r"gallons?|quarts?|pints?|tablespoons?|teaspoons?)\b)(?![^?.!]*\bweigh)",
    r"\bhow much (?:does|do) (?:a |one )?(?:gallon|liter|litre|barrel|dozen|carton|pound|ounce|kilo|loaf)s? "
    r"(?:of )?[\w ]{1,20} cost\b",
    r"\b(?:what(?:'s| is| are)|how high (?:is|are))(?: the)?(?: current| average| going)?(?: (?:30|15|10|5)-year)?"
    r"(?: fixed| variable| adjustable)? (?:mortgage|interest|fed funds|federal funds|fed|prime|savings|cd|treasury|bond|"
    r"refinance|refi|auto loan|car loan) rates?\b(?=\W*$| (?:in|on|for|at|now|today|right|this|these|averaging|going|like)\b)"
    r"(?![^?.!]*\b(?:formula|equation|example|problem|calculator|spreadsheet|excel)\b)",
    r"\b(?:are|is) (?:the )?(?:mortgage|interest|fed|prime|savings|cd|treasury) rates? (?:going (?:up|down)|coming down|rising|"
    r"falling|dropping)\b",
    # A market's moves, the roads, a strike, goods sold out: the state of the moment.
    r"\b(?:did|has|have|is|are)\b(?![^.?!]{0,80}\b(?:normal|true|likely|possible|common|usual|ever|always|typically|generally|"
    r"during|recession|history|historically)\b)[^.?!]{0,30}\b(?:stocks?|shares|nasdaq|dow|s&p(?: 500)?|stock market|"
    r"bitcoin|crypto|index|futures)\b[^.?!]{0,12}\b(?:go(?:ne)? (?:up|down)|went (?:up|down)|rise|rising|risen|fall|"
    r"falling|fallen|drop|dropping|dropped|crash|crashing|crashed|rally|rallying|close (?:up|down|higher|lower))\b",
    r"\bis the (?:stock )?market (?:up|down)\b", r"\bhow(?: is| are|'s) (?:the )?(?:[\w&.]+ )?(?:stocks?|shares|nasdaq|dow|s&p(?: 500)?|stock market|market|"
    r"markets|bitcoin|crypto|economy|index|futures) (?:doing|performing|trading|looking|do|perform|close)\b",
    r"\b(?:what'?s|what is|how'?s|how is|how bad is|is there|is there any|any)(?: the| a| any)? traffic(?: like)?"
    r"(?= (?:on|in|near|to|from|at|now|today|right now|this|around|going|heading)\b|\W*$)",
    r"\b(?:is there|are there)(?: a| an| any)? (?:[\w-]+ )?strikes?\b(?! (?:zone|price|rate|force|team|out|law|laws|rule|rules|policy|system|count))",
    r"\b(?:is|are) (?:the )?[\w-]+(?: [\w-]+)? on strike\b|\bstrike (?:over|still on|ended)\b|罢工结束了",
    r"\b(?:is|are) [\w' ]{1,30} (?:sold out|back in stock|out of stock)\b",
    r"\b(?:stock|shares?|bitcoin|btc|gold|oil|crude|brent) (?:at|trading at)\W*$", r"多少钱一股",
    # Out yet, still open to, tickets left, who holds it now ("is iOS 18 out yet", "can I still register to vote").
    r"\b(?:out|released|available) yet\b", r"\bis the new [\w'.\- ]{1,30} out\b", r"(?<![算看找查说想做猜听认选挑拿取输])出了(?:吗|没)|上市了没|发布了没",
    r"^\W*did [\w'.\- ]{1,30} (?:come out|get released|launch)(?: yet)?\W*$",
    r"\bcan (?:i|we|you) still (?:register|apply|enroll|sign up|file|vote|buy tickets|get tickets|book|join|order)\b",
    r"\btickets? (?:are |is )?(?:left|remaining|still available)\b", r"\bstill (?:any )?tickets\b",
    r"还剩(?:几|多少)(?:张|个)?(?:票|座|位|房)",
    r"\bwho(?:'s| is| are) (?:the )?richest\b(?![^?.!]*\b(?:in (?:history|the bible)|of all time|ever|character|movie|show|"
    r"book|series|game)\b)", r"\bwho(?:'s| is| are) running for\b(?![^?.!]*\b(?:movie|film|book|show|novel|class)\b)",
    r"最有钱的人是谁",
    r"\bwhat(?:'s| is| are) trending\b", r"\bwho(?:'s| are| is) the (?:[\w'’]+ ){0,3}champions?\b(?![^?.!]*\b(?:in (?:history|pokemon|the (?:game|movie|book|show|"
    r"series))|character|tournament|of all time|ever)\b)",
    r"\bwho won (?:the )?(?:ballon d'or|nobel|pulitzer|oscar|grammy|emmy|golden (?:ball|boot|globe)|mvp|heisman|cy young|"
    r"booker|best picture)\b(?![^?.!]*\bfor \w+ing\b)",
    # A countdown to a holiday or an event, either word order ("how long until christmas", "还有几天过年").
    r"\bhow long (?:is it )?(?:until|till|before) (?:christmas|thanksgiving|easter|halloween|new year'?s?|valentine'?s|hanukkah|diwali|"
    r"ramadan|the (?:election|olympics|world cup|super bowl|midterms|eclipse))\b(?! (?:should|do|can|to|you|i|we)\b)",
    r"(?:还有|还要)(?:多少天|几天|多久|多长时间)(?:就|才|到|过)?(?:过年|春节|中秋|国庆|高考|考研|元旦|放假|开学|放?寒假|放?暑假|除夕)",
    # Weather on its way, the roads and the trains now ("is there a hurricane coming", "is the L train running").
    r"\b(?:is|are|will) (?:there )?(?:a |an |the |any )?(?:hurricane|typhoon|tropical storm|storm|tornado|blizzard|wildfire|"
    r"heat wave)s? (?:coming|heading|approaching|expected|hitting|going to hit)\b", r"台风(?:来了吗|要来了?吗|会来吗|到哪了|登陆了吗)",
    r"\b(?:is|are) the (?!toilet|sink|drain|printer|nose|sinus|paper)[\w-]+(?: [\w-]+)? (?:backed up|jammed|congested)\b",
    r"\b(?:is|are) the (?:[\w-]+ ){0,2}(?:trains?|lines?|subways?|bus(?:es)?|ferry|ferries|metro|tube)s? (?:running|operating|"
    r"on time)\b",
    r"(?:地铁|线|高铁|列车|火车|动车|公交|航班|轻轨)[^,.;!?]{0,6}(?:运行正常|正常运行|停运了|恢复运行了|通车了)",
    # A table, a seat, a room still free; an index's level; a share's move ("any tables left for 8",
    # "还有位置吗", "恒指收盘多少点", "宁德时代跌了多少").
    r"\b(?:any|still) (?:[\w-]+ ){0,3}(?:tables?|seats?|rooms?|spots?|campsites?|slots?|appointments?|tickets?) "
    r"(?:left|available|open)\b", r"\b(?:tables?|seats?|spots?|slots?|tickets?|rooms?|campsites?) (?:left|remaining)\b",
    r"还有(?:位置|位子|空位|座位|空房|房间|号|名额)(?:吗|没)|有没有(?:空位|位置|座位|空房)",
    r"(?:收盘|开盘|报收|收报|现在)(?:价|在)?多少点|(?:大盘|股市|指数|恒指|上证|深证|纳指|道指)[^,.;!?]{0,6}多少点",
    r"(?:股|指数?|盘|币|金|银|价|油|市)[^,.;!?]{0,4}[涨跌]了(?:多少|几个点|百分之几)(?!才|算|合适|合理)",
    r"\btop of the [\w' ]{1,30} (?:table|standings|league|charts?)\b",
    # Goods and seats (stop 51, a second round), asked of something now: booked up, sold out, back-ordered, a
    # waitlist, pickup today; not a word to write with ("how do I tell guests we're fully booked", "售罄用英语怎么说").
    r"^\W*(?:is|are|was|has|have)\b[^?.!]{0,60}\b(?:booked up|fully booked|sold out|back-?ordered|on backorder|full yet)\b",
    r"\b(?:are there|any) (?:still )?(?:any )?vacancies\b", r"^\W*(?:do|does) [\w' -]{1,40} have [\w' -]{1,40} in stock\b",
    r"\bavailable for (?:in-store |same-day |curbside )?pickup\b",
    r"\bhow long is the (?:wait|waitlist|wait list|queue|line)\b(?! of)(?![^?.!]{0,60}\b(?:usually|typically|normally|on average|generally)\b)",
    r"\b(?:any|are there|is there|can i (?:still )?get an?) (?:[\w-]+ )?(?:walk-in|same-day) (?:slots?|appointments?)\b",
    r"\b(?:are|is) there still (?:any )?(?:spots|openings|seats|tickets|places)\b",
    r"(?:票|号源|位子|位置|座位|空房|货|库存|名额|学位)还有(?:吗|没有?)(?=\W*$)|还有(?:库存|余量|特价票?|学位|空位|号源|空房)(?:吗|没)|"
    r"(?:约满|订满|售罄|秒空|卖光|卖完)了?(?:吗|没)|是不是(?:已经|又)?(?:约满|订满|售罄|秒空|卖光)了|还买得到吗|还能(?:买|订|约|抢)到吗",
    # Who holds it now: the job, the title, the record, the pair (not in a story, nor long ago).
    r"\bwho (?:currently )?(?:coaches|runs|heads|chairs|captains) (?!a\b|an\b)(?:the )?(?!show\b|things|faster|slower|it\b|this\b|that\b)"
    r"[\w'&.-]+(?: [\w'&.-]+){0,2}\W*$",
    r"\bwho holds the (?:[\w'-]+ ){0,4}record(?: for [\w' -]{1,40})?\W*$",
    r"\b(?:is|are) (?!my\b|your\b|a\b|an\b|it\b)[\w'\- ]{1,30} still (?:the )?(?:[\w'-]+ )?(?:ceo|president|chair(?:man|woman)?|coach|prime minister|governor|"
    r"mayor|owner|manager|captain|host|in charge)(?: (?:of|at) [\w'&\- ]{1,30})?\W*$",
    r"\b(?:is|are) [\w'\- ]{1,30} still (?:married|together|dating|coaching|hosting|on the team)\W*$",
    r"\b(?:is|are) (?!the (?:process|build|script|job|server|program|code|app|query|test|container)\b|it\b|this\b|that\b)"
    r"[\w'\- ]{1,30} still running [\w'&.-]+(?: [\w'&.-]+)?\W*$",
    r"\bwho(?:'s| is) [\w'\- ]{1,30} dating(?: now| these days| right now)?\W*$",
    r"(?<!longest )(?<!shortest )\breigning (?!monarch|queen|king|emperor)", r"\b(?:current|defending) (?:[\w'-]+ ){0,3}champions?\b",
    r"\b(?:ranked|rank(?:ed)? as) (?:number one|no\.? ?1|#1|first)\b|\bworld no\.? ?1\b",
    r"\b(?:tallest|oldest|youngest|richest|shortest) living (?:person|man|woman|people|human|cat|dog|animal)\b",
    r"还是[^,.;!?]{1,12}(?:的)?(?:ceo|总裁|董事长|主教练|队长|主席|总统|首相|市长|行长)吗|"
    r"(?:ceo|总裁|董事长|主教练|队长|主席|总统|首相|市长|行长)还是[^,.;!?]{1,10}吗|"
    r"纪录保持者是谁|(?<!最早)(?<!最初)(?<!以前)(?<!当年)是谁保持的|(?:主教练|ceo|总裁|董事长|队长|市长|首相|总理|主席|行长)换(?:人)?了(?:吗|没)|"
    r"(?:现在|目前|如今)在哪个(?:俱乐部|球队|队)(?!列)|^(?![^,.;!?]*(?:当年|那时|曾经|以前|过去|小时候))[^,.;!?]{0,20}在哪个(?:俱乐部|球队)"
    r"(?:踢球|打球|效力)?(?=\W*$|呢|啊)",
    # Counting from today: since when, how old someone would be, the week of the year, a deadline missed.
    r"\bhow long has it been since\b|\bhow (?:many|much) (?:\w+ )?(?:days|weeks|months|years|time) (?:has|have) "
    r"(?:it been|gone by|passed|elapsed) since\b", r"\bhow many sleeps\b|\bsleeps? (?:until|till) (?:christmas|my birthday|halloween|"
    r"thanksgiving|easter|vacation|school|the holidays)\b", r"\bhow old would [\w'\- ]{1,30} be(?: (?:today|now|this year))?\W*$",
    r"\bwhat (?:week|quarter) (?:of the year )?is it\b", r"\bdid (?:i|we) miss the\b[^?.!]{0,30}\bdeadline\b",
    r"\bhow long (?:is it )?(?:until|till|before) (?:the next (?!dose|shot|injection|feeding|meal|step|round|set|rep|pill|refill)|"
    r"daylight sav\w+|dst|the clocks? change)",
    r"\bhow long have (?:i|we) been (?:there|here|working|married|together|at)\b",
    r"(?<![你您])(?<![你您]今年)几岁了(?=\W*$|吗|呢)|多少岁了(?!算|才|就|可以|能)|已经(?:多少|几)(?:年|周年)了|多少周年了|还剩(?:几|多少)天|"
    r"截止(?:日期)?还有(?:几|多少)天|还有(?:几|多少)(?:周|个?星期|个月)(?=\W*$|吗|呢)|再过[\d一二三四五六七八九十百]+天是(?:几月几号|哪天|几号|星期几|周几)",
    # The state of a service, a road, a law, a disaster: open or shut, down, passed, contained, back on.
    r"^\W*(?:is|are) (?:the )?(?![^?.!]{0,60}\b(?:door|window|file|tab|port|lid|valve|question|account|ticket|loop|set|subset|"
    r"interval|circuit|wound|eyes?|mouth|bracket|issue|poll|position|case|stream|connection|socket|curve|polygon|numbers?|shape|"
    r"form|thread|pipe|deal|sale|book|mind|group|channel|session|handle|cursor|browser|app|function|bag|box|jar|lock)s?\b)"
    r"[\w'&\- ]{1,40} (?:still )?(?:open|closed)(?: yet| today| now| right now)?\W*$",
    r"\b(?:is|are) (?![^?.!]{0,60}\b(?:allowed|legal|illegal|able|to be|go|going|paid|when|if|you|i|we)\b)[\w' -]{1,30} (?:still )?on strike\b",
    r"\b(?:has|have) (?:the )?[\w' -]{0,30}\b(?:bill|law|act|senate|house|congress|measure|amendment|ban|ruling)s?\b"
    r"[\w' -]{0,30} (?:passed|been (?:passed|signed|approved|struck down|overturned))\b",
    r"\bhas the (?:supreme )?court ruled\b",
    r"\b(?:is|are) [\w' -]{1,30} (?:having (?:an? )?(?:outage|issues|problems)|experiencing (?:an? )?(?:outage|issues|problems)|"
    r"down for (?:everyone|maintenance|me))\b",
    r"\bis there (?:still )?an? (?:[\w-]+ )?(?:tornado|flood|storm|hurricane|tsunami|fire|heat|winter storm|boil water|evacuation|"
    r"travel|weather|air quality|tropical storm|blizzard|wind)[\w -]{0,15}(?:warning|watch|advisory|notice|order|alert)\b",
    r"\b(?:is|are|has) (?:the )?(?:power|electricity|water|internet|service|wifi|gas)[\w ]{0,10} (?:back on|back up|been restored|restored)\b",
    r"\b(?:is|are|has|have) (?:the )?[\w' -]{0,30}\b(?:wildfire|fire|blaze)s?\b[\w' -]{0,20} (?:been )?contained\b",
    r"^\W*(?:is|are) [\w' -]{1,40} closed (?:because of|due to) (?:the )?(?:snow|storm|weather|strike|flood\w*|fire|hurricane|heat|"
    r"ice|protests?)\b",
    r"\bis (?!(?:the |my )?(?:code|program|script|app|build|process|server|it|this)\b)[\w' -]{1,30} running (?:normally|on time|on schedule)\b",
    r"\b(?:is|are) [\w' -]{1,30} still on time\W*$",
    r"\bis (?:the )?(?:federal |us |u\.s\. )?government (?:still )?(?:shut ?down|in (?:a )?shutdown)\b",
    r"\b(?:how'?s|how is|what'?s|what is) the air quality (?:like )?(?:in|at|near|today|now|right now|outside)\b(?! mars)",
    r"封路了?(?:吗|没)|封闭了(?:吗|没)|(?:还在|是否|是不是)封山|封山了(?:吗|没)|闭馆了?(?:吗|没)|闭园了?(?:吗|没)|开园了(?:吗|没)|"
    r"停课了(?=\W*$|吗|没)|恢复(?:运营|通车|运行|营业|供电|供水)了?(?:吗|没)|"
    r"(?:系统|服务器|网站|app|平台)[^,.;!?]{0,4}(?:故障|崩|挂|出问题|宕机)了?(?:吗|没)|是不是(?:又)?(?:崩|宕机)了|"
    r"(?:网站|服务器|系统|app|平台|服务)是不是(?:又)?(?:卡|挂)了|(?:他们|网站|服务器)挂了(?!怎么|如何|咋)|"
    r"(?:航班|比赛|演出|列车|高铁|火车|活动|演唱会)[^,.;!?]{0,6}取消了?(?:吗|没)(?!退|怎么|赔|怎样)|"
    r"延误严重吗|延误了?多久了|(?:法案|修正案|议案|草案|新政|方案)[^,.;!?]{0,6}通过了?(?:吗|没)|空气质量(?:怎么样|好吗|适合)(?![^,.;!?]{0,3}(?:检测|测量|测|检查))|"
    r"还在(?:封山|封路|限行|停课|停运|闭馆|罢工)|结果出来了(?:吗|没)|什么时候(?:能)?(?:来水|来电了|恢复供电|恢复供水)|"
    r"限行(?:措施)?(?:取消|结束|解除)了(?:吗|没)|(?:洪水|水位|疫情|火势)[^,.;!?]{0,4}(?:退了|控制住了|结束了)(?:吗|没)",
    # A place open or shut now, asked bare ("is the pharmacy open?", "超市还开着吗"); not its hours on a day,
    # which hold from week to week ("is the DMV open on Saturday"), nor a door or a file.
    r"^\W*(?:is|are) (?:the )?(?:[\w'&.-]+ ){0,2}(?:store|shop|bank|pharmacy|post office|dmv|library|mall|museum|restaurant|"
    r"supermarket|gym|pool|zoo|clinic|branch|cafe|market|drugstore|pharmacie)s? (?:still )?(?:open|closed)\W*$",
    r"还开着(?:吗|没)|关门了(?:吗|没)|(?<!几点)(?:开门|营业)了(?:吗|没)",
)

REFERENCE = _rx(r"那家", r"这家", r"那个", r"这个", r"它", r"他们", r"那里", r"那儿", r"这里", r"上面", r"刚才", r"前面",
                r"之前说的", r"同样的", r"那款", r"这款", r"该", r"那些", r"这些", r"那", r"此",
                r"\bit\b", r"\bthat\b", r"\bthis\b", r"\bthose\b", r"\bthese\b", r"\bthey\b", r"\bthem\b", r"\bthere\b",
                r"\bthe same\b", r"\babove\b", r"\bprevious\b", r"\bone\b")

# Action pairs: asking for one side where the other was asked is a reversed intent
# (the concepts with an ``opposite`` in data/lexicon/*.toml).
ANTONYMS: tuple[tuple[re.Pattern[str], re.Pattern[str]], ...] = tuple(
    (_rx(*first), _rx(*second)) for first, second in antonym_pairs())


def _any_of(patterns: Iterable[re.Pattern[str]]) -> re.Pattern[str]:
    """One pattern that matches where any of ``patterns`` does (each in a group of its own, so
    an alternation stays inside it): a text none of them names is told apart in one scan."""
    return _rx(*(f"(?:{p.pattern})" for p in patterns))


# What the turn asks to be done. Two requests about the same thing that ask for
# different actions ("部署" / "调试", "return" / "exchange") are different tasks,
# however alike their words. Classes hold synonyms; a turn may name several.
_ACTIONS: dict[str, re.Pattern[str]] = {name: _rx(*parts) for name, parts in action_classes().items()}
_ANY_ACTION = _any_of(_ACTIONS.values())
# A generic verb ("create", 新建) names no class of its own but may be asked as some of them:
# "create a cover letter" is "write a cover letter", "create a new database" is not "back up a
# database". Name -> (its pattern, the classes it stands for).
_GENERIC: dict[str, tuple[re.Pattern[str], frozenset[str]]] = {
    name: (_rx(*parts), classes) for name, (parts, classes) in generic_actions().items()}
_EITHER_SIDE = tuple(_any_of(pair) for pair in ANTONYMS)
_ANY_ANTONYM = _any_of(p for pair in ANTONYMS for p in pair)

_DOMAINS: dict[str, re.Pattern[str]] = {
    "medical": _rx(r"药", r"症状", r"生病", r"医生", r"看病", r"治疗", r"诊断", r"剂量", r"发烧", r"头痛", r"怀孕", r"血压",
                   r"\bmedicine\b", r"\bsymptoms?\b", r"\bdisease\b", r"\bdoctor\b", r"\bdiagnos", r"\bdos(?:e|age)\b",
                   r"\btreatment\b", r"\bpregnan", r"\bprescription\b", r"\bfever\b"),
    "legal": _rx(r"合同", r"法律", r"律师", r"诉讼", r"起诉", r"违约", r"条款", r"赔偿", r"判决", r"仲裁", r"\blegal\b",
                 r"\blawsuit\b", r"\blawyer\b", r"\bcontract\b", r"\bclause\b", r"\bliabilit", r"\bsue\b", r"\bcourt\b"),
    "finance": _rx(r"股票", r"基金", r"投资", r"理财", r"贷款", r"利率", r"个税", r"报税", r"\bstocks?\b", r"\binvest",
                   r"\bloan\b", r"\binterest rate\b", r"\btax(?:es)?\b", r"\bmortgage\b"),
    "travel": _rx(r"酒店", r"宾馆", r"饭店", r"民宿", r"景点", r"景区", r"行程", r"旅游", r"旅行", r"攻略", r"机票", r"航班", r"高铁",
                  r"火车", r"地铁", r"打车", r"出租车", r"门票", r"签证", r"自由行", r"一日游", r"餐厅", r"早餐", r"住宿",
                  r"\bhotels?\b", r"\bflights?\b", r"\btrip\b", r"\btravel", r"\bitinerar", r"\bvisa\b", r"\bsightseeing\b",
                  r"\battractions?\b", r"\btour\b", r"\bairport\b", r"\btrain\b", r"\bmetro\b", r"\btaxi\b",
                  r"\brestaurants?\b", r"\bbreakfast\b", r"\bvacation\b", r"餐馆", r"酒楼", r"饭馆", r"小吃", r"美食"),
    "support": _rx(r"退款", r"退货", r"换货", r"订单", r"物流", r"快递", r"发货", r"客服", r"售后", r"投诉", r"发票", r"保修",
                   r"维修", r"账号", r"密码", r"会员", r"优惠券", r"积分", r"扣款", r"到账", r"\brefund", r"\breturn\b",
                   r"\border\b", r"\bshipping\b", r"\bdelivery\b", r"\btracking\b", r"\bwarranty\b", r"\binvoice\b",
                   r"\baccount\b", r"\bpassword\b", r"\bsubscription\b", r"\bcoupon\b", r"\bcharged?\b", r"\bcustomer service\b"),
    "code": _rx(r"代码", r"函数", r"报错", r"异常", r"部署", r"迁移", r"编译", r"接口", r"数据库", r"服务器", r"脚本", r"调试",
                r"\bpython\b", r"\bjava(?:script)?\b", r"\bdocker\b", r"\bkubernetes\b", r"\bk8s\b", r"\bgit\b", r"\bsql\b",
                r"\bapi\b", r"\bbug\b", r"\berror\b", r"\bexception\b", r"\bdeploy", r"\bmigrat", r"\bcompil",
                r"\bfunction\b", r"\bclass\b", r"\bmethod\b", r"\blibrary\b", r"\bnpm\b", r"\bpip\b", r"\blinux\b",
                r"\bnginx\b", r"\bredis\b", r"\bcode\b", r"\bscript\b", r"\bdebug"),
    "writing": _rx(r"改写", r"润色", r"翻译", r"邮件", r"文章", r"摘要", r"总结", r"段落", r"文案", r"标题", r"作文", r"简历",
                   r"语气", r"\brewrite\b", r"\bpolish\b", r"\btranslat", r"\bemail\b", r"\bessay\b", r"\bsummar",
                   r"\bparagraph\b", r"\bproofread\b", r"\bdraft\b", r"\bletter\b", r"\bresume\b", r"\btone\b"),
}
HIGH_RISK_DOMAINS = frozenset({"medical", "legal", "finance"})

# Question types, most specific first; STRONG ones never match each other or the rest.
_SKELETONS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("why", _rx(r"为什么", r"为何", r"怎么会", r"怎么回事", r"什么原因", r"原因", r"\bwhy\b", r"\bhow come\b", r"\breason\b")),
    ("how_much", _rx(r"多少钱", r"价格", r"费用", r"多贵", r"收费", r"价钱", r"预算.{0,6}多少", r"多少预算", r"花多少",
                     r"\bhow much\b", r"\bprice\b", r"\bcost\b", r"\bbudget\b",
                     r"\bfees?\b")),
    ("how_long", _rx(r"多久", r"多长时间", r"什么时候", r"何时", r"几天", r"多少天", r"几个小时", r"几点", r"\bhow long\b",
                     r"^when\b", r"\bwhen (?:is|are|was|will|does|do|can|should|did|would)\b", r"\bwhat time\b",
                     r"\bopening hours\b",
                     r"\btravel time\b", r"\bhow early\b", r"\bhow many (?:hours|days|minutes)\b")),
    ("where", _rx(r"哪里", r"在哪", r"哪儿", r"什么地方", r"\bwhere\b")),
    ("who", _rx(r"(?<!什)谁", r"\bwho\b")),
    ("compare", _rx(r"区别", r"对比", r"比较", r"哪个好", r"哪个更", r"\bvs\.?\b", r"\bdifference\b", r"\bcompare\b",
                    r"\bbetter\b")),
    ("recommend", _rx(r"推荐", r"建议", r"\brecommend", r"\bsuggest")),
    ("write", _rx(r"写", r"生成", r"起草", r"改写", r"润色", r"翻译", r"\bwrite\b", r"\bdraft\b", r"\brewrite\b",
                  r"\btranslate\b", r"\bgenerate\b", r"\bcompose\b")),
    ("how", _rx(r"怎么", r"如何", r"怎样", r"步骤", r"方法", r"\bhow\b", r"\bsteps\b", r"\bway to\b")),
    ("explain", _rx(r"什么是", r"是什么", r"解释", r"介绍", r"\bwhat is\b", r"\bwhat's\b", r"\bexplain\b", r"\bdescribe\b")),
    ("yes_no", _rx(r"吗", r"能不能", r"可不可以", r"是否", r"有没有", r"\bcan i\b", r"\bis it\b", r"\bdoes\b", r"\bshould i\b",
                   r"\bis there\b", r"\bdo you\b")),
)
STRONG_SKELETONS = frozenset({"why", "how_much", "how_long", "where", "who", "compare"})


# A correction spoken to the assistant: the turn opens with it ("不对，改走 B 方案", "no wait, I
# meant Lisbon"). Without an earlier answer only such a turn is a correction; "发票抬头写错了，
# 还能改吗" or "I typed the wrong email at signup" tell of the user's own mistake and ask anew.
_ADDRESSED_CORRECTION = re.compile(
    # what may come before it: "no, I meant Paris", "sorry, that's wrong", "嗯，不对", "抱歉，我说错了"
    r"^\W*(?:(?:no+|nope|sorry|oops|actually|wait|hmm+|um+|uh+|ah|oh|嗯+|哦+|啊+|呃+|唉|抱歉|对不起|不好意思|不+)"
    r"(?![a-z])\W*)*"
    r"(?:不对|不是的|不是不是|错了|[你我]?(?:搞|说|弄|理解|写)错了|更正一下|纠正一下|我是说(?!话)|我的意思是|我说的是|"
    r"that'?s (?:wrong|not right|incorrect)|that is (?:wrong|not right|incorrect)|incorrect|"
    r"i meant|correction:|scratch that|my mistake|no,? wait|you misunderstood|not what i (?:asked|meant))",
    re.I)


# A clause that takes back what the turn just said, after interjections: corrections that end
# their clause ("……说错了，我要去的是深圳", "不对说错了，是珠海", "scratch that, for Norway"), or
# what the asker meant, after a "no" or a "sorry" ("——啊不，我要的是日语", "sorry, I meant SF").
# Not a marker run into other words ("不对的地方请指正", "i meant to ask", "我是说真的"), nor a bare
# "no" ("no, thanks", "不，不着急"), nor "make it" alone (an instruction: "make it short").
_TAKES_BACK = re.compile(
    r"^\W*(?:(?:oh|ah|um+|uh+|er+m?|hmm+|啊+|呃+|哦+|嗯+|唉)(?![a-z])\W*)*"
    r"(?:(?:(?:不对|(?:[你我]?(?:说|打|写|搞|弄))?错了|口误|更正(?:一下)?|纠正(?:一下)?|"
    r"scratch that|correction|my mistake|my bad|typo)\W*)+(?<=[^\W\d_])(?=\s*[,:;.!?，。：；！？…—-])"
    r"|(?:(?:no+|nope|sorry|不+|抱歉|不好意思)(?![a-z])\W+)+"
    r"(?:i meant|i mean|make it|make that|我是说|我的意思是|我说的是|我要的是|应该是)(?![a-z])"
    r"(?!\s*(?:to|it|well|that|真的|认真))"
    r"|make that(?![a-z]))", re.I)


def takes_back(part: str) -> bool:
    """Whether a turn's later part takes back what the turn said before it (``_TAKES_BACK``)."""
    return bool(_TAKES_BACK.match(part))


def corrects_an_answer(text: str, has_context: bool) -> bool:
    """Whether a turn that carries a correction marker corrects an answer: always after an
    earlier exchange; in a first turn only when it opens with the correction (a bare "不对，…")."""
    return has_context or bool(_ADDRESSED_CORRECTION.match(text))


def change_flags(text: str) -> frozenset[ChangeFlag]:
    """Which change markers a normalised turn carries. A reset or correction marker counts only
    where it speaks to the conversation, not about the topic ("怎么从头开始学", "我的代码报错了":
    ``addressed``)."""
    flags = set()
    for flag, pattern in ((ChangeFlag.NEGATION, NEGATION), (ChangeFlag.ADDITION, ADDITION),
                          (ChangeFlag.REMOVAL, REMOVAL), (ChangeFlag.REPLACEMENT, REPLACEMENT)):
        if pattern.search(text):
            flags.add(flag)
    for flag, pattern, kind in ((ChangeFlag.CORRECTION, CORRECTION, "correction"), (ChangeFlag.RESET, RESET, "reset")):
        if any(speaks_to_conversation(text, kind, m) for m in pattern.finditer(text)):
            flags.add(flag)
    return frozenset(flags)


def negation_count(text: str) -> int:
    """How many intent negations a turn holds; parity differing between two turns is a reversal."""
    return len(NEGATION.findall(text))


def action_sides(text: str) -> tuple[int, ...]:
    """For each antonym pair: +1 if only the first side is asked, -1 only the second, 0 otherwise."""
    if not _ANY_ANTONYM.search(text):      # most turns name no side of any pair
        return (0,) * len(ANTONYMS)
    sides = []
    for (first, second), either in zip(ANTONYMS, _EITHER_SIDE):
        if not either.search(text):
            sides.append(0)
            continue
        # Remove the second side first: "uninstall" contains "install", "取消订阅" contains "订阅".
        has_second = bool(second.search(text))
        has_first = bool(first.search(second.sub(" ", text)))
        sides.append(1 if has_first and not has_second else -1 if has_second and not has_first else 0)
    return tuple(sides)


@lru_cache(maxsize=4096)
def intent_domain(text: str) -> str:
    """The domain with the most keyword hits; 'general' when none fires. Ties go to the
    keyword that comes last: the head noun ("投诉邮件" is an email, not a complaint). Memoised:
    a conversation's history is read again with every turn."""
    best, best_score = "general", (0, -1)
    for domain, pattern in _DOMAINS.items():
        matches = list(pattern.finditer(text))
        if matches:
            score = (len(matches), matches[-1].end())
            if score > best_score:
                best, best_score = domain, score
    return best


def task_actions(text: str) -> tuple[str, ...]:
    """The action classes a turn asks for, sorted ('deploy', 'refund', 'translate', ...);
    read from the instruction only, not from pasted material ("…下周计划开始测试")."""
    text = instruction_part(text)
    if not _ANY_ACTION.search(text):
        return ()
    return tuple(sorted(name for name, pattern in _ACTIONS.items() if pattern.search(text)))


@lru_cache(maxsize=4096)
def generic_verbs(text: str) -> tuple[str, ...]:
    """The generic verbs a turn's instruction holds ('create'); memoised: a cached turn meets
    every lookup that finds it."""
    text = instruction_part(text)
    return tuple(name for name, (pattern, _) in _GENERIC.items() if pattern.search(text))


def actions_named(text: str, actions: tuple[str, ...]) -> list[str]:
    """What a turn asks to be done, for a reason: its action classes, or else its generic verbs."""
    return list(actions or generic_verbs(text))


def actions_conflict(text_a: str, actions_a: tuple[str, ...], text_b: str, actions_b: tuple[str, ...]) -> bool:
    """Whether two turns ask for different actions: both name action classes and the sets
    differ; or one names none but a generic verb, and the other a class that verb cannot stand
    for ("create a new database" / "back up a database"; not "create" / "write a cover letter")."""
    if actions_a and actions_b:
        return actions_a != actions_b
    if not (actions_a or actions_b):
        return False
    bare, classes = (text_a, actions_b) if not actions_a else (text_b, actions_a)
    return any(not set(classes) <= _GENERIC[name][1] for name in generic_verbs(bare))


# "在哪里开启" / "where can I enable": asking where a setting is, is asking how to do it.
_WHERE_TO_DO = _rx(r"(?:在哪|哪里|哪儿)(?:里|儿)?(?:可以|能)?(?:开启|打开|关闭|关掉|设置|修改|申请|找到|查看|开通|启用)",
                   r"\bwhere (?:can|do|should) i (?:enable|disable|turn|switch|set|change|find|apply)\b")


def task_skeleton(text: str) -> str:
    """The question type of a turn ('why', 'how', 'write', ...; 'other' when none)."""
    if _WHERE_TO_DO.search(text):
        return "how"
    for name, pattern in _SKELETONS:
        if pattern.search(text):
            return name
    return "other"


def skeletons_conflict(a: str, b: str) -> bool:
    """True when two question types ask for different things (a 'why' is never a 'how much').
    'other' (no type recognised) conflicts with the strong types too: unsure is not same."""
    return a != b and (a in STRONG_SKELETONS or b in STRONG_SKELETONS)


# Actions that only transform the text they are given: after "翻译成英文：" or "rewrite this:",
# any material, however short, is worked on ("我明天请假" is no question about tomorrow). Not a
# summary or a title: "总结一下：今天的新闻" names a topic, not a text.
_TRANSFORMS = ("translate", "polish", "rewrite")
# An instruction that points at the material it hands over ("make this sound formal:", "帮我看看
# 这封邮件："); one that asks for an action class ("总结要点：") works on it too.
_POINTS_AT_MATERIAL = re.compile(r"\b(?:this|these|the following|below|text|sentence|paragraph|email|message|"
                                 r"letter|reply)\b|这|以下|下面|如下|下列", re.I)
# A colon between two digits is a clock time ("9:00"), never a mark before material.
_MARK = {":": re.compile(r"(?<!\d):|:(?!\d)"), "?": re.compile(r"\?")}


def _splits(text: str, mark: str) -> list[tuple[str, str]]:
    """Every (instruction, material) split of ``text`` at ``mark``, first mark first
    ("just checking: make this casual: …" has two)."""
    return [(text[:m.start()], text[m.end():]) for m in _MARK[mark].finditer(text)]


def instruction_part(text: str) -> str:
    """The instruction of an "instruction: material" turn ("总结要点：由于天气原因……"): words
    inside the material are what is worked on, not what is asked. Material is 15 characters
    or more, or anything after an instruction that only transforms it.

        >>> instruction_part("把这句话翻译成英文:我明天请假。"), instruction_part("查一下:明天天气怎么样")
        ('把这句话翻译成英文', '查一下:明天天气怎么样')
    """
    for mark in (":", "?"):
        for head, tail in _splits(text, mark)[:1]:
            if len(head) <= 60 and tail.strip() and (len(tail.strip()) >= 15 or mark == ":" and _transforms(head)):
                return head
    return text


def _transforms(instruction: str) -> bool:
    return any(_ACTIONS[name].search(instruction) for name in _TRANSFORMS)


# Material that asks something: "quick question: what's the weather in paris today?" is a
# question about today, however long.
_MATERIAL_ASKS = re.compile(r"\?|[吗呢么][\s。.!！]*$|怎么|什么|多少|几[点号天时]|哪|"
                            r"^\s*(?:what|how|when|where|who|which|why|is|are|do|does|did|can|could|will|would|"
                            r"should)\b", re.I)


def is_time_sensitive(text: str) -> bool:
    """Whether the answer depends on when it is asked. Time words in the material of an
    "instruction: material" turn do not count when the instruction only transforms it
    ("翻译成英文：明天几点开会"), or when it points at material of 15 characters or more that
    asks nothing ("make this formal: saturday's event moves to next sunday"). Anything else
    after the mark is read: a question ("quick question: what's the weather in paris today?"),
    a topic ("总结一下：今天的新闻"), a bare "tell me: the weather in paris today".

        >>> [is_time_sensitive(t) for t in ("翻译成英文:明天几点开会?", "quick question: what's the weather in paris today?",
        ...                                 "make this formal: saturday's event moves to next sunday.", "总结一下:今天的新闻",
        ...                                 "just checking: make this casual: the event moves to next sunday.")]
        [False, True, False, True, False]
    """
    for mark in (":", "?"):
        for head, tail in _splits(text, mark):
            tail = tail.strip()
            if len(head) > 60 or not tail:
                continue
            if _transforms(head) or (len(tail) >= 15 and not _MATERIAL_ASKS.search(tail)
                                     and (_POINTS_AT_MATERIAL.search(head) or asks_an_action(head))):
                return depends_on_now(head)
    return depends_on_now(text)


def asks_an_action(instruction: str) -> bool:
    """Whether an instruction asks for any action class (summarise, reply, plan, …)."""
    return any(pattern.search(instruction) for pattern in _ACTIONS.values())


def has_reference(text: str) -> bool:
    return bool(REFERENCE.search(text))


def announces_topic_switch(text: str) -> bool:
    return bool(TOPIC_SWITCH.search(text))
